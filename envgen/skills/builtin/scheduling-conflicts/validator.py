"""Validator of the scheduling-conflicts skill.

Scheduling: intervals with start and end, a booking tool that refuses overlaps, an overlap check.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


import re

START = r"(^|_)(start|starts|begin|begins)(_|$)|^(valid_)?from(_|$)|^check_in$"
END = r"(^|_)(end|ends|finish|until)(_|$)|^(valid_)?to(_|$)|^check_out$"
CONFLICT = r"conflict|overlap|clash|taken|already booked|not free|double[- ]book"


def validate(spec):
    problems = []
    pairs = []
    for t in tables(spec).values():
        cols = list(t["columns"])
        starts = [c for c in cols if re.search(START, c)]
        ends = [c for c in cols if re.search(END, c) and not re.search(START, c)]
        if starts and ends:
            pairs.append((starts[0], ends[0]))
    if not pairs:
        problems.append("no table has both a start and an end column (e.g. start_time, end_time)")
    writes = write_tools(spec)
    bookers = [n for n in writes if re.search(r"book|schedule|reserve|create|add|move|reschedule", n)]
    if not bookers:
        problems.append("no booking tool: add a state-changing tool named like book_/schedule_/reserve_")
    raises = re.findall(r"ToolError\(([^\n]*)", spec.get("code") or "")
    if not [r for r in raises if re.search(CONFLICT, r, re.I)]:
        problems.append("the code never raises ToolError for a conflict; refuse overlapping bookings with a "
                        "message that names the clash")
    overlap_check = False
    exercised = False
    for turn in every_turn(spec):
        if [n for n in called(turn) if n in bookers]:
            exercised = True
        for c in checks_of(turn, ("sql", "python")):
            text = check_text(c).lower()
            for start, end in pairs:
                if start in text and end in text and "<" in text:
                    overlap_check = True
    if bookers and not exercised:
        problems.append("no task's reference books anything (%s)" % ", ".join(sorted(bookers)))
    if pairs and not overlap_check:
        problems.append("no sql or python check compares start and end times; add one that asserts no two "
                        "bookings of one resource overlap")
    return problems
