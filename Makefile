# The two commands: `make demo` and `make test`. Everything else is set-up they pull in.
VENV      := .venv
PY        := $(VENV)/bin/python
UV        := $(VENV)/bin/uv
STAMP     := $(VENV)/.installed
PYTHON    ?= python3

.PHONY: install demo demo-library demo-postgres serve test lint typecheck unit clean bench-peers

$(STAMP): pyproject.toml requirements/overrides.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check uv==0.13.8
	# --compile-bytecode: uv skips .pyc files by default, and where PYTHONDONTWRITEBYTECODE is set
	# no run ever writes them, so every process (each Flink Python worker too) compiled pyflink,
	# beam, pandas and pyiceberg again: 5.3 s of CPU per import of the job's modules, 2.0 s compiled.
	$(UV) pip install --python $(PY) --compile-bytecode -e '.[flink,kafka,dev]' --override requirements/overrides.txt
	# pyspark 3.5 is an sdist that uv builds again for each new venv (about 1 GB each in its cache,
	# never reused here): the cache reached 70 GB and filled the disk. Prune what no venv uses.
	$(UV) cache prune --quiet || true
	touch $(STAMP)

install: $(STAMP)

# The real pipeline: Kafka (KRaft) + CDC producer + PyFlink ingest job; see scripts/demo_ingest.py.
# ARGS for a shorter run, e.g. ARGS="--events 3000 --rate 1500" (tests/integration/test_make_targets.py).
demo: install
	$(PY) scripts/demo_ingest.py $(ARGS)

# A real Debezium source: PostgreSQL (logical decoding) -> Kafka Connect + Debezium -> Kafka ->
# the ingest job; prints the merged table beside PostgreSQL's. See scripts/demo_postgres.py.
demo-postgres: install
	$(PY) scripts/demo_postgres.py

# The library-only demo (no Kafka, no Flink), also the fallback of `demo` without Java/Maven.
demo-library: install
	$(PY) scripts/demo.py

# The catalogs of conf/catalogs.yaml as an Iceberg REST catalog on 127.0.0.1:8181 (docs/rest.md).
serve: install
	$(VENV)/bin/mixed-iceberg serve --config conf/service.yaml $(ARGS)

test: install
	bash scripts/test.sh

lint: install
	$(VENV)/bin/ruff check mixed_iceberg tests bench scripts jobs
	$(VENV)/bin/ruff format --check mixed_iceberg tests bench scripts jobs

typecheck: install
	$(VENV)/bin/mypy

unit: install
	$(PY) -m pytest tests/unit tests/property -q

# Side-by-side benchmark against pypaimon, DuckLake, delta-rs and pyiceberg, each peer in its own
# venv under bench/peers/.envs/ (their pins conflict); see bench/README.md. ARGS=--quick for a smoke run.
bench-peers: install
	bash bench/peers/envs.sh
	bench/peers/.envs/orchestrator/bin/python -m bench.peers.orchestrate $(ARGS)

clean:
	-bash scripts/services/connect.sh clean
	-bash scripts/services/seaweedfs.sh clean
	-bash scripts/services/postgres.sh clean
	-bash scripts/services/kafka.sh clean
	rm -rf $(VENV) .venv-core .warehouse .services
