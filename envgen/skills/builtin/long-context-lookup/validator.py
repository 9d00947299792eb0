"""Validator of the long-context-lookup skill.

Long context: a table with at least 200 seeded rows, paged filtered search, filtered lookups.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


import re

MIN_ROWS = 200
SEARCH = ("search", "find", "list", "filter", "query", "lookup")


def estimate_rows(stmt):
    """Rows an INSERT adds: the bound of a recursive CTE, else the number of VALUES tuples."""
    if re.search(r"\bRECURSIVE\b", stmt, re.I):
        bounds = []
        for a, b in re.findall(r"<\s*=?\s*([0-9]+)|\bLIMIT\s+([0-9]+)", stmt, re.I):
            bounds.append(int(a or b))
        return max(bounds) if bounds else 0
    m = re.search(r"\bVALUES\b", stmt, re.I)
    if not m:
        return 0
    return len([p for p in split_top(stmt[m.end():].strip().rstrip(";"), ",") if p.startswith("(")])


def seeded_rows(spec):
    counts = {}
    seed = (spec.get("state") or {}).get("seed_sql") or ""
    for stmt in split_top(seed, ";"):
        m = re.match(r"\s*(?:INSERT|REPLACE)\s+(?:OR\s+\w+\s+)?INTO\s+[\"`\[]?(\w+)", stmt, re.I)
        if m:
            table = m.group(1).lower()
            counts[table] = counts.get(table, 0) + estimate_rows(stmt)
    return counts


def validate(spec):
    problems = []
    counts = seeded_rows(spec)
    big = [t for t, n in counts.items() if n >= MIN_ROWS]
    if not big:
        most = max(counts.values()) if counts else 0
        problems.append("no table is seeded with %d+ rows (largest: %d); generate rows with INSERT INTO t (...) "
                        "WITH RECURSIVE n(x) AS (...) SELECT ..." % (MIN_ROWS, most))
    code = spec.get("code") or ""
    if not re.search(r"\bLIMIT\b", code, re.I):
        problems.append("no query in the code has a LIMIT; page search results so a dump of the table is impossible")
    writes = write_tools(spec)
    searchers = {}
    for t in spec.get("tools", []):
        params = t.get("parameters") or {}
        optional = [p for p in (params.get("properties") or {}) if p not in (params.get("required") or [])]
        if t["name"] not in writes and t["name"].split("_")[0] in SEARCH and len(optional) >= 2:
            searchers[t["name"]] = optional
    if not searchers:
        problems.append("no search tool with at least 2 optional filter parameters")
    filtered = 0
    for turn in every_turn(spec):
        for c in turn.get("reference", []):
            args = c.get("arguments") or {}
            if c.get("name") in searchers and len([a for a in args if a in searchers[c.get("name")]]) >= 2:
                filtered += 1
    if filtered < 2:
        problems.append("only %d reference calls filter on 2+ fields; write tasks that need a narrow filtered "
                        "lookup" % filtered)
    return problems
