#!/usr/bin/env bash
# A one-node Slurm on 127.0.0.1 (Debian's slurm-wlm + munge) for the Slurm executor's tests
# and benchmark: munged, slurmctld and slurmd, no cgroups (proctrack/linuxproc, task/none),
# so it runs in a container too. Idempotent: a cluster that answers `sinfo` is left alone.
#
#   scripts/slurm-up.sh          # start (or confirm) it; exit 0 when sinfo answers
#   scripts/slurm-up.sh down     # stop the daemons it started
#
# It writes /etc/slurm/slurm.conf only when there is none or the one there is its own
# (first line below), so a real cluster's configuration is never touched. Needs root and the
# packages (apt-get install slurm-wlm munge); without them it says why and exits 1, and the
# tests skip with that reason.
set -uo pipefail
MARK="# reefkit one-node Slurm (scripts/slurm-up.sh)"
CONF=/etc/slurm/slurm.conf
STATE=${REEFKIT_SLURM_STATE:-/var/lib/reefkit-slurm}
CPUS=${REEFKIT_SLURM_CPUS:-4}

say() { echo "slurm-up: $*" >&2; }
ours() { [ -f "$CONF" ] && [ "$(head -n1 "$CONF")" = "$MARK" ]; }

if [ "${1:-up}" = down ]; then
    ours || { say "$CONF is not this script's: nothing stopped"; exit 0; }
    for d in slurmd slurmctld; do
        [ -f "$STATE/$d.pid" ] && kill "$(cat "$STATE/$d.pid")" 2>/dev/null && say "$d stopped"
    done
    exit 0
fi

for cmd in munged slurmctld slurmd sinfo sbatch scancel; do
    command -v "$cmd" >/dev/null || { say "$cmd is not installed (apt-get install slurm-wlm munge)"; exit 1; }
done
[ "$(id -u)" = 0 ] || { say "needs root (munged and slurmd run as root here)"; exit 1; }

# (our own cluster with no slurmctld running is not asked: sinfo would wait its MessageTimeout)
if ! { ours && ! pgrep -x slurmctld >/dev/null; } && timeout 10 sinfo -h >/dev/null 2>&1; then say "Slurm already answers: $(sinfo -h -o '%P %D %T' | head -n1)"; exit 0; fi

if [ -f "$CONF" ] && ! ours; then say "$CONF exists and is not this script's: not starting a second cluster"; exit 1; fi

# munge: a key (the package makes one; make it if missing) and its daemon
mkdir -p /run/munge /var/log/munge /var/lib/munge && chown munge:munge /run/munge /var/log/munge /var/lib/munge
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=128 2>/dev/null; chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key; }
if ! munge -n </dev/null >/dev/null 2>&1; then
    runuser -u munge -- munged || munged --force || { say "munged does not start"; exit 1; }
fi

mkdir -p "$STATE/ctld" "$STATE/spool" /etc/slurm
cat > "$CONF" <<CONF
$MARK
ClusterName=reefkit
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
SchedulerParameters=sched_interval=1
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
cat > /etc/slurm/cgroup.conf <<CONF
$MARK
CgroupPlugin=autodetect
IgnoreSystemd=yes
CONF

pgrep -x slurmctld >/dev/null || slurmctld -i || { say "slurmctld does not start: see $STATE/slurmctld.log"; exit 1; }
pgrep -x slurmd >/dev/null || slurmd || { say "slurmd does not start: see $STATE/slurmd.log"; exit 1; }
for _ in $(seq 1 30); do
    state=$(timeout 5 sinfo -h -o '%T' 2>/dev/null | head -n1)
    case "$state" in idle*|mix*|alloc*) say "one-node Slurm up: partition debug, $CPUS CPUs on 127.0.0.1"; exit 0;; esac
    sleep 1
done
say "Slurm does not answer or its node is not idle (state: ${state:-none}): see $STATE/slurmctld.log and slurmd.log"
exit 1
