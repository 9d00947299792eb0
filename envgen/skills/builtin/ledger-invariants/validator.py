"""Validator of the ledger-invariants skill.

Ledgers: an integer balance column, a transfer-like tool, and a check that money is conserved.

Runs sandboxed (restricted Python, see gym_envs.sandbox); `spec` is the environment
spec as a plain JSON dict. Returns a list of problems, each saying what to fix; an empty
list means the spec has the structure this skill is about. The helpers of
envgen/skills/validator_helpers.py (tables, functions, write_tools, checks_of, called, ...) are
prepended before it runs.
"""


import re

TRANSFER_WORDS = ("transfer", "reallocate", "move", "send", "pay", "settle")


def validate(spec):
    problems = []
    balance_cols = []
    for name, t in tables(spec).items():
        for col, decl in t["columns"].items():
            if "balance" in col:
                if not is_numeric(decl):
                    problems.append("column %s.%s must be numeric" % (name, col))
                elif re.match(r"\s*(REAL|FLOAT|DOUBLE)", decl, re.I):
                    problems.append("column %s.%s is %s; keep money as INTEGER cents" % (name, col, decl.split()[0]))
                else:
                    balance_cols.append(col)
    if not balance_cols:
        problems.append("no table has a numeric balance column (e.g. balance_cents INTEGER NOT NULL)")
    writes = write_tools(spec)
    movers = [n for n in writes if any(w in n.lower() for w in TRANSFER_WORDS)]
    if not movers:
        problems.append("no transfer-like tool: add a state-changing tool named like transfer/reallocate/pay that "
                        "debits one balance and credits another")
    conserving = False
    exercised = False
    for turn in every_turn(spec):
        if [n for n in called(turn) if n in movers]:
            exercised = True
        for c in checks_of(turn, ("sql", "python")):
            text = check_text(c).lower()
            if "sum(" in text and any(col in text for col in balance_cols):
                conserving = True
    if movers and not exercised:
        problems.append("no task's reference calls the transfer tool (%s)" % ", ".join(sorted(movers)))
    if balance_cols and not conserving:
        problems.append("no sql or python check sums the balances: add one that verifies money is conserved "
                        "(e.g. sum(balance_cents) equals the total before the transfer)")
    return problems
