"""The layout of a Hugging Face export: its data files and every column, with its type and meaning.

The one place the columns are documented: :mod:`envgen.export` writes and reads the Parquet files
by these tables, and :mod:`envgen.export_card` prints them in the dataset card. Types are pyarrow
types spelled as strings (``export`` turns them into pyarrow types).
"""

from __future__ import annotations

__all__ = ["DATA_FILES", "ENV_COLUMNS", "TASK_COLUMNS"]

DATA_FILES = {"tasks": "data/tasks.parquet", "environments": "data/environments.parquet"}

# (name, pyarrow type spelled as a string, meaning)
_PROVENANCE = "struct<generator: string, skill_id: string, stream: string, prompt_sha256: string, seed: int64, " \
              "created_at: string, parents: list<string>>"
_SOURCE = "struct<corpus: string, doc_id: string, path: string, sha256: string>"
TASK_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("env_id", "string", "the environment's id"),
    ("task_id", "string", "the task's id inside its environment"),
    ("kind", "string", "execute, read, read_then_write, missing_parameter or decline"),
    ("n_turns", "int32", "user turns in the task"),
    ("instructions", "list<string>", "each turn's user instruction, in order"),
    ("title", "string", "the environment's title"),
    ("description", "string", "what the simulated system is"),
    ("tool_names", "list<string>", "the environment's tool names"),
    ("tools", "string", "the tools the task offers as it begins, as JSON, OpenAI function format "
                        "([{\"type\": \"function\", \"function\": ...}]); those it withholds come with a later turn"),
    ("system_prompt", "string", "the solver's system prompt envwright uses (title, description, the tools the task "
                                "offers as it begins, call format)"),
    ("proposer", "string", "what generated the environment (template:NAME, llm:MODEL, manual)"),
    ("skill_id", "string", "the skill that conditioned generation (null: none)"),
    ("stream", "string", "skill, explore, template or manual"),
    ("provenance", _PROVENANCE, "the spec's provenance"),
    ("source", _SOURCE, "the corpus document the environment is grounded in (null: hand-written)"),
    ("solve_rate", "float64", "passes / attempts of evaluated policies on this task (null: not evaluated)"),
    ("n_evals", "int64", "evaluated attempts behind solve_rate"),
    ("spec_json", "string", "the whole environment spec (the library's spec file, byte for byte)"),
)
ENV_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("env_id", "string", "the environment's id"),
    ("title", "string", "title"),
    ("description", "string", "description"),
    ("n_tools", "int32", "number of tools"),
    ("n_tasks", "int32", "number of tasks"),
    ("tool_names", "list<string>", "tool names"),
    ("task_ids", "list<string>", "task ids, in spec order"),
    ("task_kinds", "list<string>", "each task's kind, in spec order"),
    ("proposer", "string", "what generated it (template:NAME, llm:MODEL, manual)"),
    ("model", "string", "the model behind an llm proposer"),
    ("skill_id", "string", "the conditioning skill (null: none)"),
    ("stream", "string", "skill, explore, template or manual"),
    ("corpus", "string", "source corpus"),
    ("doc_id", "string", "source document id"),
    ("doc_path", "string", "source document path"),
    ("grounding", "float64", "share of tool and table names traced to the source document (null: not measured)"),
    ("solve_rate", "float64", "passes / attempts of evaluated policies (null: not evaluated)"),
    ("n_evals", "int64", "evaluated attempts behind solve_rate"),
    ("split", "string", "train/held-out split set by evaluation (null: none)"),
    ("valid", "bool", "accepted by the validity gate"),
    ("reasons", "string", "JSON list of notes recorded with the acceptance"),
    ("signature", "string", "SHA-256 of the sorted tool signatures (deduplication key)"),
    ("run_id", "string", "the generation run that made it"),
    ("created_at", "string", "when it entered the library (ISO 8601)"),
    ("task_stats", "string", "JSON list of per-task, per-policy results (env_id, task_id, policy, n, passes, "
                             "reference_passes, updated_at)"),
    ("spec_sha256", "string", "SHA-256 of spec_json"),
    ("gate_report", "string", "the validity gate's report on it, as the library kept it (JSON; null: none kept); "
                              "import runs the gate again and compares"),
    ("spec_json", "string", "the spec file, byte for byte"),
)
