"""The cold-start bench's first-warning measure runs end to end: a fresh interpreter starts
the Lambda as the cold start does, then handles two Spot warnings through the real entry
point against moto's server and the Kubernetes API emulator, and each node is tainted
(``bench.first_message`` checks it). Timings are reported, not asserted."""

from __future__ import annotations

from bench.first_message import first_message


def test_first_spot_warning_after_a_cold_start_loads_nothing_start_up_deferred() -> None:
    result = first_message(runs=1)
    assert result["first_ms"] > 0 and result["second_ms"] > 0
    # What start-up leaves out must not come back with the first warning.
    deferred = {"pydantic", "aws_xray_sdk", "yaml", "asyncio"}
    assert deferred & set(result["loaded_by_first"]) == set()
    assert not any(m.startswith("lifeboat.") for m in result["loaded_by_first"])
