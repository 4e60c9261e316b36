"""The preview resources at the wire: their paths, paging and JSON shapes, and the classic wire's refusal."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from scheduler_core.api import views
from scheduler_core.api.paging import link_after, parse_occurrence_query
from scheduler_core.api.paths import check_url, parse_path
from scheduler_core.dashboard.insight import job_insight
from scheduler_core.definitions import Wire, parse_job
from scheduler_core.errors import NotFoundError, ValidationError
from scheduler_core.model import Job, JobState
from scheduler_core.model.collection import Calendar
from scheduler_core.storage.keys import CollectionRef, JobRef

JC = "subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Scheduler/jobCollections/jc1"


def test_the_preview_paths_parse_with_their_names() -> None:
    calendar = parse_path(f"{JC}/calendars/Public%20Holidays")
    assert (calendar.kind, calendar.collection, calendar.calendar) == ("calendar", "jc1", "Public Holidays")
    assert calendar.preview_only
    assert parse_path(f"{JC}/CALENDARS").kind == "calendars"
    occurrences = parse_path(f"{JC}/jobs/j1/occurrences")
    assert (occurrences.kind, occurrences.job) == ("job_occurrences", "j1")
    assert not parse_path(f"{JC}/jobs/j1").preview_only
    with pytest.raises(NotFoundError):
        parse_path(f"{JC}/calendars/a/b")


def test_a_calendar_name_follows_the_name_rule() -> None:
    with pytest.raises(ValidationError) as caught:
        parse_path(f"{JC}/calendars/bad.")
    assert caught.value.path == "calendarName"
    with pytest.raises(ValidationError) as encoded:
        check_url(f"http://h/{JC}/calendars/a%2Fb?api-version=2026-12-01-preview")
    assert encoded.value.path == "calendarName"
    with pytest.raises(ValidationError) as job:
        check_url(f"http://h/{JC}/jobs/a%2Fb?api-version=2016-03-01")
    assert job.value.path == "jobName"


def test_the_classic_wire_refuses_the_preview_paths_naming_the_api_version() -> None:
    for path in (f"{JC}/calendars", f"{JC}/calendars/c", f"{JC}/jobs/j1/occurrences"):
        with pytest.raises(ValidationError) as caught:
            views.require_preview(Wire.CLASSIC, parse_path(path))
        assert caught.value.path == "api-version" and "2026-12-01-preview" in caught.value.rule
        views.require_preview(Wire.PREVIEW, parse_path(path))
    views.require_preview(Wire.CLASSIC, parse_path(f"{JC}/jobs/j1"))


def test_a_calendar_answer() -> None:
    ref = CollectionRef("s1", "rg1", "jc1")
    answered = views.calendar(ref, Calendar("Holidays", (date(2030, 12, 25), date(2030, 1, 1))))
    assert answered == {
        "id": f"/{JC}/calendars/Holidays",
        "type": "Microsoft.Scheduler/jobCollections/calendars",
        "name": "jc1/Holidays",
        "properties": {"dates": ["2030-12-25", "2030-01-01"]},
    }


def test_occurrences_page_by_instant() -> None:
    assert parse_occurrence_query({}) == (10, None)
    top, after = parse_occurrence_query({"$top": "3", "after": "2030-01-01T10:00:00+02:00"})
    assert (top, after) == (3, datetime(2030, 1, 1, 8, tzinfo=UTC))
    assert after is not None
    for bad, field in (({"$top": "0"}, "$top"), ({"$top": "101"}, "$top"), ({"after": "soon"}, "after")):
        with pytest.raises(ValidationError) as caught:
            parse_occurrence_query(bad)
        assert caught.value.path == field
    with pytest.raises(ValidationError) as skipped:
        parse_occurrence_query({"$skip": "5"})
    assert skipped.value.path == "$skip"
    link = link_after(f"http://h/{JC}/jobs/j1/occurrences?api-version=2026-12-01-preview&$top=2&after=x", after)
    query = parse_qs(urlsplit(link).query)
    assert query == {"api-version": ["2026-12-01-preview"], "$top": ["2"], "after": ["2030-01-01T08:00:00Z"]}
    page = views.occurrences([(after, datetime(2030, 1, 1, 8, 4, 1, tzinfo=UTC))], link)
    assert page == {
        "value": [{"scheduledTime": "2030-01-01T08:00:00Z", "fireTime": "2030-01-01T08:04:01Z"}],
        "nextLink": link,
    }


def test_the_dashboard_lists_the_signing_secret_as_write_only_and_never_shows_it() -> None:
    secret = "whsec_" + "QUJD" * 8
    now = datetime(2030, 1, 1, tzinfo=UTC)
    body = {
        "properties": {
            "startTime": "2030-01-01T06:00:00Z",
            "action": {
                "type": "Https",
                "request": {
                    "uri": "https://example.org/x",
                    "method": "POST",
                    "signing": {"scheme": "StandardWebhooks", "secret": secret},
                },
            },
            "recurrence": {"frequency": "Hour", "jitter": "PT10M"},
        }
    }
    definition = parse_job(body, now=now, wire=Wire.PREVIEW).definition
    job = Job(JobRef(CollectionRef("s1", "rg1", "jc1"), "j"), definition, JobState.ENABLED, 1, now, now)
    insight = job_insight(job, now, 3)
    assert {"path": "action.request.signing.secret", "set": True, "meaning": "set"} in insight["writeOnly"]
    assert secret not in str(insight)
    fires = [datetime.fromisoformat(item["utc"].replace("Z", "+00:00")) for item in insight["occurrences"]]
    nominal = [datetime(2030, 1, 1, 6 + i, tzinfo=UTC) for i in range(3)]
    assert all(n <= f < n + timedelta(minutes=10) for n, f in zip(nominal, fires, strict=True))
    assert fires != nominal  # the dashboard shows the jittered instants
