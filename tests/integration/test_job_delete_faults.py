"""Faults: a job's delete whose connection fails before its answer. The delete is a one-operation transaction
(a POST, so that "removed" and "already gone" differ), which the storage client does not send again. The real
``TableJobs`` over Azurite's tables, reached through :mod:`tests.support.answer_loss_proxy`, a real TCP proxy
that closes a connection before the request reaches Azurite (as a server closing a kept-alive connection
just as it is reused), or lets the request land and loses its answer.

The promise (``JobStore.delete``): a delete that did not land is sent again and removes the job (True); a
delete whose answer was lost says it cannot tell who removed the job (None: the API answers the delete, the
job's other rows go, and its slot is not given back, so never twice); a delete that cannot reach storage at
all raises ``StorageError`` and removes nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import pytest

from local_host.azurite import Azurite, AzuritePorts
from scheduler_core import wiring
from scheduler_core.adapters.azure.clients import table_service
from scheduler_core.adapters.azure.provision import provision
from scheduler_core.adapters.azure.tables import DELETE_TRIES, table_stores
from scheduler_core.errors import EtagMismatchError, StorageError
from scheduler_core.ports import Stores
from scheduler_core.settings import Settings
from scheduler_core.storage.keys import CollectionRef, JobRef
from tests.contract.records import JOB, job
from tests.support.answer_loss_proxy import AnswerLossProxy, answer_loss_proxy
from tests.support.jobs import http_action, job_body

pytestmark = [pytest.mark.azurite]


def transactions(method: str, target: str) -> bool:
    return method == "POST" and urlsplit(target).path.rstrip("/").endswith("$batch")


@pytest.fixture
def proxied(storage_env: Settings, azurite: Azurite) -> Iterator[tuple[Stores, AnswerLossProxy]]:
    provision(storage_env)
    with answer_loss_proxy(("127.0.0.1", azurite.ports.table)) as proxy:
        ports = AzuritePorts(blob=azurite.ports.blob, queue=azurite.ports.queue, table=proxy.port)
        settings = dataclasses.replace(storage_env, storage_connection_string=ports.connection_string())
        yield table_stores(table_service(settings), settings), proxy


@pytest.mark.parametrize("guarded", [True, False], ids=["etag", "any-version"])
def test_a_delete_closed_before_it_reached_storage_is_sent_again_and_removes_the_job(
    proxied: tuple[Stores, AnswerLossProxy], guarded: bool
) -> None:
    stores, proxy = proxied
    saved = stores.jobs.save(job(), create=True)
    proxy.close_before(transactions, times=DELETE_TRIES - 1)
    assert stores.jobs.delete(JOB, saved.etag if guarded else None) is True  # this call removed it
    assert len(proxy.refused) == DELETE_TRIES - 1
    assert stores.jobs.get(JOB) is None


def test_a_delete_whose_answer_was_lost_says_it_cannot_tell_who_removed_the_job(
    proxied: tuple[Stores, AnswerLossProxy],
) -> None:
    stores, proxy = proxied
    saved = stores.jobs.save(job(), create=True)
    proxy.lose(transactions, times=1)
    assert stores.jobs.delete(JOB, saved.etag) is None  # gone; its own removal or another's: it cannot tell
    [lost] = proxy.lost
    assert lost.answer.split()[1] == "202"  # it landed: the transaction's answer
    assert stores.jobs.get(JOB) is None


def test_a_delete_that_never_reaches_storage_raises_and_removes_nothing(
    proxied: tuple[Stores, AnswerLossProxy],
) -> None:
    stores, proxy = proxied
    saved = stores.jobs.save(job(), create=True)
    proxy.close_before(transactions, times=DELETE_TRIES)
    with pytest.raises(StorageError) as raised:
        stores.jobs.delete(JOB, saved.etag)
    assert raised.value.transient
    assert len(proxy.refused) == DELETE_TRIES
    assert stores.jobs.get(JOB) == saved


@pytest.mark.parametrize("fault", ["close", "lose"])
def test_a_delete_sent_again_still_refuses_a_job_changed_meanwhile(
    proxied: tuple[Stores, AnswerLossProxy], fault: str
) -> None:
    stores, proxy = proxied
    saved = stores.jobs.save(job(), create=True)
    changed = stores.jobs.save(job(generation=2), create=False, etag=saved.etag)
    arm: Callable[..., None] = proxy.close_before if fault == "close" else proxy.lose
    arm(transactions, times=1)
    with pytest.raises(EtagMismatchError):
        stores.jobs.delete(JOB, saved.etag)
    assert stores.jobs.get(JOB) == changed


def test_the_api_answers_a_delete_whose_answer_was_lost_and_removes_the_jobs_rows(
    storage_env: Settings, azurite: Azurite
) -> None:
    provision(storage_env)
    with answer_loss_proxy(("127.0.0.1", azurite.ports.table)) as proxy:
        ports = AzuritePorts(blob=azurite.ports.blob, queue=azurite.ports.queue, table=proxy.port)
        settings = dataclasses.replace(storage_env, storage_connection_string=ports.connection_string())
        service = wiring.build(settings).service
        collection = CollectionRef("sub", "rg", "jc")
        quota = {"maxJobCount": 8}  # small enough that no slots are reserved ahead: the counter counts the jobs
        service.put_collection(
            collection, {"location": "west", "properties": {"sku": {"name": "Standard"}, "quota": quota}}
        )
        ref = JobRef(collection, "gone")
        action = http_action("https://example.org/", method="GET", body=None)
        job_written, _ = service.put_job(ref, job_body(datetime.now(UTC) + timedelta(days=1), action))
        assert job_written.due is not None
        stores = wiring.build(storage_env).stores  # direct to Azurite: the checks
        assert stores.collections.get(collection).job_count == 1  # type: ignore[union-attr]

        proxy.lose(transactions, times=1)
        service.delete_job(ref)  # answered: not "not found" for the delete that removed it

        [lost] = proxy.lost
        assert lost.answer.split()[1] == "202"
        assert stores.jobs.get(ref) is None
        assert not [e for e in stores.due.due_before(job_written.due.shard, "~") if e.job_row == ref.row_key]
        assert stores.collections.get(collection).job_count == 1  # type: ignore[union-attr]  # not given back
