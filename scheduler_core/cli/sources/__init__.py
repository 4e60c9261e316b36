"""Importers of other schedulers' jobs: ``python -m scheduler_core import --from SOURCE FILE... --collection C``.

Each source is converted into job bodies of api-version 2026-12-01-preview (``{"name", "properties"}``)
and a list of notes of what could not be carried (source location, what, why): nothing is dropped without a
note. The jobs then go through the import of export files (:mod:`scheduler_core.cli.transfer`): planned
and validated by the service's own rules, sent with the preview api-version, reported per job. ``--dry-run``
sends nothing and shows each job's first occurrences beside what the source would have run.

* ``crontab`` (:mod:`.crontab`): ``crontab -l`` output; curl/wget lines become HTTP jobs.
* ``kubernetes`` (:mod:`.kubernetes`): CronJob manifests (YAML or JSON, one or many documents).
* ``eventbridge`` (:mod:`.eventbridge`): ``aws scheduler get-schedule`` output.
* ``cloud-scheduler`` (:mod:`.cloud_scheduler`): ``gcloud scheduler jobs describe`` output (YAML or JSON).

Each module's docstring is its contract: what it carries, and what it lists. Files are read bounded
(:mod:`._reading`: 8 MiB, UTF-8 text, YAML aliases bounded); shell commands by :mod:`._shell`; the source's
own occurrences by :mod:`._oracle` (croniter and the source's daylight-saving rule).
"""

from __future__ import annotations

from scheduler_core.cli.sources._run import SOURCES, convert_files, import_from_source

__all__ = ["SOURCES", "convert_files", "import_from_source"]
