#!/usr/bin/env bash
# The submitters of docker-compose.yml: submit a Flink job unless one of its name already runs.
#
#   bash docker/submit.sh JOB_NAME flink run -d -py jobs/ingest_cdc.py --config conf/ingest.yaml ...
#
# Waits for the JobManager's REST API, then runs the given command. `docker compose up` starts a
# submitter again each time; the name check keeps that from submitting a second copy of a job
# that survived (a second ingest job would fence the first one's Kafka transactions). To add a
# job of a name that runs already (a second optimizer job of a group), run the command itself:
# `docker compose run --rm optimizer-default flink run -d -py jobs/optimizer_job.py ...`.
set -euo pipefail

name="${1:?usage: submit.sh JOB_NAME COMMAND...}"
shift
[[ $# -gt 0 ]] || {
    echo "submit.sh: no command to run for $name" >&2
    exit 2
}

listing=""
for ((i = 0; i < 60; i++)); do
    if listing="$(flink list -r 2>/dev/null)"; then
        break
    fi
    echo "submit.sh: waiting for the JobManager ($((i + 1))/60)" >&2
    sleep 5
done
[[ -n "$listing" ]] || {
    echo "submit.sh: the JobManager did not answer 'flink list -r' within 300 s" >&2
    exit 1
}

# `flink list -r` prints "<start time> : <job id> : <job name> (RUNNING|RESTARTING)" per job.
if grep -qF " : $name (" <<<"$listing"; then
    echo "submit.sh: $name is running already; not submitting it again" >&2
    exit 0
fi
echo "submit.sh: submitting $name: $*" >&2
exec "$@"
