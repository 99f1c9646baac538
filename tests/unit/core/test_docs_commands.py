"""Every command the README and docs/ offer runs somewhere in the suite, or says why not.

The commands are the lines of the pages' shell blocks and the inline commands of their prose
(``make ...``, ``mixed-iceberg ...``, ``python -m ...``, ``python jobs/...``, ``bash scripts/...``,
``flink run ... .py``, ``docker compose ...``). Each must match an entry of :data:`RUN_BY`: the
test (or fixture) that runs it, which must exist, or a reason it cannot run here. An entry that
matches no command any more fails too, so the table stays the pages' own. A new command in the
docs therefore fails this test until a test runs it (``make demo-postgres`` once broke unnoticed).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.services import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_INLINE = re.compile(
    r"^(?:(?:\.venv(?:-core)?/bin/)?(?:make [a-z]|mixed-iceberg [\[a-z]|python -m |python (?:jobs|scripts)/|bash scripts/)"
    r"|flink run .*\.py|docker compose )"
)

#: (pattern of the command, where it runs: ``path::name`` of a test or fixture, or ``None`` with
#: the reason it does not run in the suite).
RUN_BY: list[tuple[str, str | None, str]] = [
    # make targets
    (r"make demo", "tests/integration/test_make_targets.py::test_make_demo_ingests_optimizes_and_listens_on_loopback_only", ""),
    (r"make demo-library", "tests/integration/test_make_targets.py::test_make_demo_library_runs_the_library_demo", ""),
    (
        r"make demo-postgres",
        "tests/integration/test_debezium_postgres.py::test_make_demo_postgres_shows_the_table_equal_to_postgresql",
        "",
    ),
    (r"make test", None, "the suite itself: scripts/test.sh, which CI runs"),
    (
        r"make serve",
        None,
        "a server that runs until stopped: it runs `mixed-iceberg serve --config conf/service.yaml`, which "
        "tests/support/rest_server.py starts (with a test config) for every REST test",
    ),
    (
        r"(?:\.venv/bin/)?mixed-iceberg serve( --config conf/service\.yaml)?",
        "tests/integration/test_rest_pyiceberg.py::test_many_tiny_appends_and_a_schema_change_read_back_equal",
        "",
    ),
    (r"make install", None, "a prerequisite of every make target; the suite runs in the venv it built"),
    (
        r"make bench-peers",
        None,
        "too long for the suite: --quick took 9 s to build the peers' venvs (uv cache warm) and "
        "208 s to run (2 cores, another test session beside it)",
    ),
    (
        r"\.venv/bin/python -m bench\.minor_cost( --every 10)?",
        None,
        "a benchmark cited for its stored results: 1M- and 10M-row tables, too long for the suite",
    ),
    # the CLI
    (r'mixed-iceberg sql( ".*")?( --csv)?', "tests/unit/query/test_terminal.py::test_the_cli_prints_a_table_json_or_csv", ""),
    (
        r"\.venv/bin/mixed-iceberg (status|optimize|sql) (db\.orders|\"SELECT \* FROM db\.orders).*",
        "tests/unit/core/test_readme_example.py::test_readme_python_blocks_run",
        "",
    ),
    (
        r"mixed-iceberg \[--catalog local\] status db\.orders",
        "tests/unit/core/test_readme_example.py::test_readme_python_blocks_run",
        "",
    ),
    (r"mixed-iceberg optimize db\.orders .*", "tests/integration/test_optimizing_interop.py::test_cli_status_and_optimize", ""),
    (
        r"mixed-iceberg (--json )?(catalogs|create|tables|describe|properties|status|optimize|maintenance|groups|optimizers|processes)( .*)?",
        "tests/unit/cli/test_docs_cli.py::test_docs_cli_commands_run_as_written",
        "",
    ),
    (
        r"mixed-iceberg optimizer( --group local --threads 2)?",
        "tests/integration/test_optimizer_processes.py::test_two_optimizer_processes_share_a_group_and_never_overlap_on_a_table",
        "",
    ),
    (
        r"mixed-iceberg groups",
        "tests/integration/test_optimizer_processes.py::test_two_optimizer_processes_share_a_group_and_never_overlap_on_a_table",
        "",
    ),
    # the jobs and the producer
    (
        r"python jobs/ingest_cdc\.py( --config conf/ingest\.yaml)?",
        "tests/integration/test_ingest_pipeline.py::test_cdc_stream_lands_in_table_logstore_and_dead_letter_topic",
        "",
    ),
    (
        r"python jobs/ingest_cdc\.py --config conf/ingest-debezium\.yaml( --until-caught-up)?",
        "tests/integration/test_debezium_postgres.py::test_debezium_postgres_changes_land_in_the_table_value_by_value",
        "",
    ),
    (
        r"python scripts/produce_cdc\.py --topic orders_cdc --events 100000 --keys 10000",
        "tests/integration/test_ingest_pipeline.py::test_cdc_stream_lands_in_table_logstore_and_dead_letter_topic",
        "",
    ),
    (r"python jobs/optimizer_job\.py .*", "tests/integration/test_optimizer_job.py::test_the_optimizer_job_serves_its_group", ""),
    (
        r"flink run -d -py jobs/optimizer_job\.py .*",
        "tests/integration/test_optimizer_job.py::test_the_optimizer_job_serves_its_group",
        "",
    ),
    (
        r"flink run -d -py jobs/ingest_cdc\.py .*",
        "tests/integration/test_flink_cluster_ingest.py::test_flink_run_on_a_session_cluster_ingests_exactly_once",
        "",
    ),
    # the services
    (r"bash scripts/services/kafka\.sh start", "tests/conftest.py::kafka_bootstrap", ""),
    (r"bash scripts/services/postgres\.sh start", "tests/integration/test_debezium_postgres.py::logical_postgres", ""),
    (r"bash scripts/services/connect\.sh (start|stop)", "tests/integration/test_debezium_postgres.py::connect_url", ""),
    (r"bash scripts/services/flink\.sh (start|stop)", "tests/integration/test_flink_cluster_ingest.py::flink_rest", ""),
    (r"bash scripts/jars/loopback-agent\.sh", "tests/integration/test_loopback_agent.py::agent", ""),
    (r"bash scripts/jars/rest\.sh", "tests/conftest.py::iceberg_rest_reference", ""),
    (r"bash scripts/browser\.sh", "tests/support/browser.py::chromium_path", ""),
    (
        r"(?:\.venv/bin/)?python -m bench\.dashboard_list( --quick)?",
        "tests/unit/bench/test_bench_runs.py::test_dashboard_list_quick_run_lists_every_table_with_its_figures",
        "",
    ),
    (
        r"bash scripts/services/flink\.sh (run -py .*|cli list)",
        "tests/integration/test_flink_cluster_ingest.py::test_flink_run_on_a_session_cluster_ingests_exactly_once",
        "",
    ),
    (
        r".*docker compose up .*",
        "tests/unit/core/test_compose.py::test_the_file_loads_as_docker_compose_would",
        "no Docker engine here: the file is checked instead",
    ),
    # modules
    (
        r"python -m mixed_iceberg\.config",
        "tests/unit/core/test_docs_commands.py::test_python_m_mixed_iceberg_config_prints_docs_options_md",
        "",
    ),
    (
        r"python -m bench\.point_lookup",
        "tests/unit/bench/test_bench_runs.py::test_point_lookup_quick_run_finds_every_key_and_plans_fewer_files",
        "",
    ),
    (
        r"python -m bench\.format_core",
        "tests/unit/bench/test_bench_runs.py::test_format_core_quick_run_reports_every_figure_beside_its_baseline",
        "",
    ),
    (
        r"(?:\.venv/bin/)?python -m bench\.optimizer_scale.*",
        "tests/unit/bench/test_bench_runs.py::test_optimizer_scale_quick_run_measures_both_systems_on_the_same_catalog_shape",
        "",
    ),
    (
        r"python -m bench\.ingest",
        None,
        "too long for the suite: its shortest run (--quick --events 3000 --seconds 3) took 111 s, two PyFlink jobs",
    ),
    (
        r"python -m bench\.rest_commits",
        None,
        "too long for the suite: its --quick run starts three catalogs and 51 client processes (about 3 min)",
    ),
    (
        r"python -m bench\.(cdc_parser|optimizing_soak|read_memory)",
        None,
        "benchmarks docs/ cites for their figures (bench/README.md); not offered in the README",
    ),
    (
        r"python -m tests\.support\.rck --uri .*",
        "tests/integration/test_rest_compatibility_kit.py::test_the_kit_passes_against_icebergs_reference_server_skipping_only_its_own_assumptions",
        "",
    ),
    (r"python -m tests\.support\.services reap", None, "scripts/test.sh runs it when the session ends"),
    (r"\.venv-core/bin/python -m pytest .*", None, "scripts/test.sh's core step: the unit tests in the venv without extras"),
]


def offered_commands() -> dict[str, list[str]]:
    """Command -> the pages offering it (shell-block lines without comments; inline commands)."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        text = page.read_text()
        commands = []
        for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE):
            commands += [" ".join(line.split("#", 1)[0].split()) for line in block.splitlines()]
        commands += [" ".join(span.split()) for span in re.findall(r"`([^`\n]+)`", text) if _INLINE.match(" ".join(span.split()))]
        for command in filter(None, commands):
            found.setdefault(command, []).append(page.name)
    return found


def _defined(where: str) -> bool:
    path, name = where.split("::")
    source = (ROOT / path).read_text()
    return re.search(rf"^\s*def {re.escape(name)}\(", source, flags=re.MULTILINE) is not None


def test_every_offered_command_runs_in_a_named_test_or_says_why_not() -> None:
    commands = offered_commands()
    assert len(commands) > 30, sorted(commands)  # the pages were read
    unaccounted = [
        f"{c}  ({', '.join(pages)})" for c, pages in commands.items() if not any(re.fullmatch(p, c) for p, _, _ in RUN_BY)
    ]
    assert unaccounted == [], "commands the docs offer that no test runs; run each in a test and add it to RUN_BY:\n" + "\n".join(
        unaccounted
    )
    stale = [pattern for pattern, _, _ in RUN_BY if not any(re.fullmatch(pattern, c) for c in commands)]
    assert stale == [], f"RUN_BY entries no page offers any more: {stale}"


@pytest.mark.parametrize(("pattern", "where"), [(p, w) for p, w, _ in RUN_BY if w is not None], ids=lambda x: x)
def test_the_named_runner_exists(pattern: str, where: str) -> None:
    assert _defined(where), f"{pattern}: {where} does not exist"


def test_every_exemption_says_why() -> None:
    assert all(reason for _, where, reason in RUN_BY if where is None)


def test_python_m_mixed_iceberg_config_prints_docs_options_md() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mixed_iceberg.config"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == (ROOT / "docs" / "options.md").read_text()
