"""What the scheduler writes to its log: routine feeding summed into one line a minute, the
intake's report as text rather than a dataclass repr."""

from __future__ import annotations

from datetime import UTC, datetime

from bf4ps.scheduler.intake import IntakeReport
from bf4ps.scheduler.service import FeedTally


def test_feeding_is_summed_until_its_interval_has_passed() -> None:
    tally = FeedTally(seconds=3600.0)
    tally.add(4)
    tally.add(0)
    tally.add(3)
    assert not tally.due()  # within the interval: no line
    tally.seconds = 0.0
    assert tally.due()
    jobs, ticks, over = tally.take()
    assert (jobs, ticks) == (7, 3) and over >= 0.0
    tally.add(0)
    assert not tally.due()  # nothing fed since: nothing to say, however long it has been


def test_the_intake_report_reads_as_text() -> None:
    report = IntakeReport(aliases_new=2, aliases_read=5, soldiers_new=2, soldiers_updated=3,
                          names_new=1, jobs_created=4, created_by_class={"active": 4},
                          batches=1, cursor=812, watermark=datetime(2026, 11, 30, 12, tzinfo=UTC))
    line = report.describe()
    assert line == ("2 new aliases in 1 batches, 5 read (0 skipped); soldiers +2 new, 3 "
                    "updated, 1 new names; jobs 4 created (active 4), 0 promoted; 0 marked "
                    "due; sessions +0 opened, 0 closed; cursor 812, watermark "
                    "2026-11-30 12:00:00 UTC")
    assert "IntakeReport(" not in line
