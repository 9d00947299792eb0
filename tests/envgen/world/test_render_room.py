"""A ``room`` guard: a create is refused when its container holds as many active records as its capacity."""

from __future__ import annotations

from envgen.world.compile import compile_world
from envgen.world.sim import Simulator
from tests.envgen.world.operator_world import operator_world


def test_a_room_guard_admits_records_up_to_the_capacity_then_refuses() -> None:
    cw = compile_world(operator_world(), env_id="test-print-room", seed=0)
    sim = Simulator(cw.spec)
    run = sim.run()
    try:
        tables = run.tables()
        def active(printer: dict) -> int:
            return sum(1 for j in tables["print_jobs"] if j["printer_id"] == printer["id"] and j["state"] != "done")

        printer = max(tables["printers"], key=lambda p: p["queue_limit"] - active(p))
        assert printer["queue_limit"] > active(printer)
        patron = tables["patrons"][0]["email"]
        args = {"printer_code": printer["printer_code"], "patron_email": patron, "copies": 1}
        for _ in range(printer["queue_limit"] - active(printer)):
            made = run.call("submit_job", args)
            assert made.ok and made.result["printer_code"] == printer["printer_code"]
            assert made.result["state"] == "queued"
        refused = run.call("submit_job", args)
        assert not refused.ok and refused.error == f"The queue of {printer['printer_code']} is full."
        assert run.call("hold_job", {"job_number": made.result["job_number"]}).ok  # a held job still waits
        assert not run.call("submit_job", args).ok
    finally:
        run.close()
        sim.close()
