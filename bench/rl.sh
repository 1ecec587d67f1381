#!/usr/bin/env bash
# bench/rl.sh: issue 15's targets, side by side in one run:
#   - each RL.LIMIT algorithm at -P 16 against CL.THROTTLE (>= 0.9x),
#     RL.CHECK with three rules (>= 0.5x);
#   - each algorithm native on Turnstile against the same algorithm as a
#     Lua script (EVALSHA) on a private redis-server (>= 5x): GCRA as
#     redis_rate's script (bench/lua/gcra.lua), the others from bench/lua/rl/;
#   - bytes per key: each algorithm's state (MEMORY USAGE), and LOG with 100
#     entries against Redis's sorted-set log with 100 members (<= 1/2);
#   - server CPU per request: the server's threads' CPU time
#     (bench/cpu.sh: /proc/PID/task/*/schedstat, in ns) read right before
#     and after each redis-benchmark run, so that the ratios can be judged
#     where the one client, not the server, bounds the throughput (a PING
#     run on Turnstile shows that bound).
#
#   bench/rl.sh                     # ROUNDS=3
#   ROUNDS=1 N=100000 bench/rl.sh   # a quick check
#   PORT_T=7650 PORT_R=7651 ...     # fixed ports (default: free ones)
#
# Servers on CPU 0, redis-benchmark on CPU 1 (taskset), -c 50, 100,000
# random keys; medians of ROUNDS, order rotating. Writes bench/LIMITERS.md
# and bench/out/rl.csv (req/s, and the server's CPU seconds for the run's
# requests).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
ROUNDS=${ROUNDS:-3}
N=${N:-400000}
TMO=${TMO:-300}
REPORT=${REPORT:-bench/LIMITERS.md}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
for v in ROUNDS N TMO; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"; done
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; }
mkdir -p "$OUT"
go build -o "$OUT/turnstile" ./cmd/turnstile
if (($(nproc) >= 2)); then SRV=(taskset -c 0); CLI=(taskset -c 1); PIN="servers on CPU 0, clients on CPU 1"
else SRV=(); CLI=(); PIN="none (one CPU)"; fi

# shellcheck source=bench/cpu.sh
. bench/cpu.sh

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
POLICIES=$OUT/rl-policies.json
cat >"$POLICIES" <<'JSON'
{ "rules": [
  { "id": "ip", "algorithm": "gcra", "limit": 1000000, "per": "1s" },
  { "id": "user", "algorithm": "sliding", "limit": 1000000, "per": "1m" },
  { "id": "tenant", "algorithm": "fixed", "limit": 1000000000, "per": "1h" }
] }
JSON
declare -A PID PORT
start() { # start t|r [port]
	local p=${2:-}
	[[ -n $p ]] || p=$(free_port)
	case $1 in
	t) "${SRV[@]}" "$OUT/turnstile" --port "$p" --bind 127.0.0.1 --save '' --appendonly no --policies "$POLICIES" >"$OUT/rl-$1.log" 2>&1 & ;;
	r) "${SRV[@]}" redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$OUT/rl-$1.log" 2>&1 & ;;
	esac
	PID[$1]=$! PORT[$1]=$p
	for _ in $(seq 100); do redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
	die "$1 did not start"
}
stop() { kill "${PID[$1]}" 2>/dev/null || true; wait "${PID[$1]}" 2>/dev/null || true; }
trap 'for n in "${!PID[@]}"; do stop "$n"; done' EXIT
start t "${PORT_T:-}"
start r "${PORT_R:-}"
log "pinning: $PIN; turnstile :${PORT[t]}, redis :${PORT[r]}"
declare -A SHA
for a in fixed sliding log; do SHA[$a]=$(redis-cli -p "${PORT[r]}" -x script load <bench/lua/rl/$a.lua); done
SHA[gcra]=$(redis-cli -p "${PORT[r]}" -x script load <bench/lua/gcra.lua)

# name|server|command (keys: __rand_int__). Limits high enough that most
# requests are allowed (the write path), as in the CL.THROTTLE runs.
TESTS=(
	"ping|t|PING"
	"ping|r|PING"
	"cl.throttle|t|CL.THROTTLE rl:__rand_int__ 1000 1000000 1"
	"gcra|t|RL.LIMIT rl:__rand_int__ GCRA 1000000 1s"
	"fixed|t|RL.LIMIT rl:__rand_int__ FIXED 1000000 1s"
	"sliding|t|RL.LIMIT rl:__rand_int__ SLIDING 1000000 1s"
	"log|t|RL.LIMIT rl:__rand_int__ LOG 100 1s"
	"check3|t|RL.CHECK ip __rand_int__ user __rand_int__ tenant __rand_int__"
	"gcra|r|EVALSHA ${SHA[gcra]} 1 rl:__rand_int__ 1000000 1000000 1 1"
	"fixed|r|EVALSHA ${SHA[fixed]} 1 rl:__rand_int__ 1000000 1000"
	"sliding|r|EVALSHA ${SHA[sliding]} 1 rl:__rand_int__ 1000000 1000"
	"log|r|EVALSHA ${SHA[log]} 1 rl:__rand_int__ 100 1000"
)
CSV=$OUT/rl.csv
echo "test,server,round,value,cpu_s,requests" >"$CSV"
for round in $(seq "$ROUNDS"); do
	n=${#TESTS[@]}
	for ((i = 0; i < n; i++)); do
		IFS='|' read -r name srv cmd <<<"${TESTS[(i + round - 1) % n]}"
		log "round $round: $name on $srv"
		redis-cli -p "${PORT[$srv]}" flushall >/dev/null
		t0=$(cpu_ns "${PID[$srv]}")
		# shellcheck disable=SC2086
		v=$(timeout "$TMO" "${CLI[@]}" redis-benchmark -p "${PORT[$srv]}" -c 50 -P 16 -r 100000 -n "$N" --csv $cmd 2>/dev/null |
			awk -F'","' 'NR == 2 { print $2 }') || v=failed
		t1=$(cpu_ns "${PID[$srv]}")
		cpu=$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.6f", d / 1e9 }')
		echo "$name,$srv,$round,$v,$cpu,$N" >>"$CSV"
	done
done

# Bytes per key: 1,000 keys per algorithm, MEMORY USAGE averaged.
usage() { # port key
	redis-cli -p "$1" memory usage "$2"
}
declare -A BYTES
redis-cli -p "${PORT[t]}" flushall >/dev/null
redis-cli -p "${PORT[r]}" flushall >/dev/null
for a in GCRA FIXED SLIDING LOG; do
	for i in $(seq 200); do echo "RL.LIMIT m:$a:$i $a 100 1h"; done | redis-cli -p "${PORT[t]}" >/dev/null
	tot=0
	for i in $(seq 200); do tot=$((tot + $(usage "${PORT[t]}" "m:$a:$i"))); done
	BYTES[$a]=$((tot / 200))
done
for i in $(seq 200); do echo "CL.THROTTLE m:cl:$i 99 100 3600"; done | redis-cli -p "${PORT[t]}" >/dev/null
tot=0; for i in $(seq 200); do tot=$((tot + $(usage "${PORT[t]}" "m:cl:$i"))); done; BYTES[CL]=$((tot / 200))
# LOG with 100 entries against the sorted set with 100 members.
for i in $(seq 50); do
	for j in $(seq 100); do echo "RL.LIMIT L:$i LOG 100 1h"; done
done | redis-cli -p "${PORT[t]}" >/dev/null
for i in $(seq 50); do
	for j in $(seq 100); do echo "EVALSHA ${SHA[log]} 1 L:$i 100 3600000"; done
done | redis-cli -p "${PORT[r]}" >/dev/null
tl=0; rl=0
for i in $(seq 50); do
	[[ $(redis-cli -p "${PORT[r]}" zcard "L:$i") == 100 ]] || die "the Redis log L:$i does not hold 100 entries"
	tl=$((tl + $(usage "${PORT[t]}" "L:$i"))); rl=$((rl + $(usage "${PORT[r]}" "L:$i")))
done
LOGT=$((tl / 50)) LOGR=$((rl / 50))

{
	echo "# RL.* limiters: Turnstile next to CL.THROTTLE and to Redis + Lua (bench/rl.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs ($(lscpu 2>/dev/null | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}')), Redis $(redis-server --version | awk '{sub(/^v=/, "", $3); print $3}'), pinning: $PIN."
	echo "Command: \`ROUNDS=$ROUNDS N=$N bench/rl.sh\`. Requests per second, redis-benchmark -c 50 -P 16 -r 100000;"
	echo "medians of $ROUNDS rounds, order rotating; ratios are medians of per-round ratios (range in brackets)."
	echo "Server CPU per request: the CPU time of the server's threads during the run (bench/cpu.sh:"
	echo "/proc/PID/task/*/schedstat, in ns) divided by the requests."
	echo
	python3 - "$CSV" <<'PY'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
vals, cpus, rounds, cround = {}, {}, {}, {}
for r in rows:
    try: v = float(r["value"])
    except ValueError: continue
    k = (r["test"], r["server"])
    vals.setdefault(k, []).append(v)
    rounds.setdefault(r["round"], {})[k] = v
    try: us = float(r["cpu_s"]) * 1e6 / float(r["requests"])
    except (KeyError, ValueError, ZeroDivisionError): continue
    if us > 0:
        cpus.setdefault(k, []).append(us)
        cround.setdefault(r["round"], {})[k] = us
def ratio(rs_by_round, a, b, target):
    rs = sorted(rd[a] / rd[b] for rd in rs_by_round.values() if a in rd and b in rd)
    if not rs: return "missing", "missing"
    m = statistics.median(rs)
    return f"{m:.2f}x ({rs[0]:.2f}-{rs[-1]:.2f})", ("met" if m >= target else "**missed**")
thr = lambda a, b, target: ratio(rounds, a, b, target)
cpu = lambda a, b, target: ratio(cround, a, b, target)  # a's CPU per request over b's: b is the cheaper when > 1
med = lambda k: f"{statistics.median(vals[k]):,.0f}" if k in vals else "failed"
us = lambda k: f"{statistics.median(cpus[k]):.2f}" if k in cpus else "missing"
print(f"PING on Turnstile: {med(('ping','t'))} req/s ({us(('ping','t'))} us of server CPU per request): one redis-benchmark")
print("process on one CPU caps every run near this rate, whatever the server does, so a throughput ratio")
print("near 1 says little about the server; the server CPU per request below is the server's own cost.")
print(f"PING on Redis: {med(('ping','r'))} req/s ({us(('ping','r'))} us of server CPU per request): reading requests and")
print("writing replies on this machine's loopback costs about this much per request in any server, so no")
print("algorithm can be more times cheaper than Redis + Lua than Redis + Lua's CPU per request over this floor.")
print()
print(f"CL.THROTTLE on Turnstile: {med(('cl.throttle','t'))} req/s, {us(('cl.throttle','t'))} us of server CPU per request.")
print()
print("Throughput (requests per second):")
print()
print("| algorithm | Turnstile RL.* | / CL.THROTTLE | target | Redis + Lua | Turnstile / Redis + Lua | target |")
print("|---|---:|---:|---|---:|---:|---|")
for a in ["gcra", "fixed", "sliding", "log"]:
    r1, m1 = thr((a, "t"), ("cl.throttle", "t"), 0.9)
    r2, m2 = thr((a, "t"), (a, "r"), 5.0)
    print(f"| {a.upper()} | {med((a,'t'))} | {r1} | >= 0.9x: {m1} | {med((a,'r'))} | {r2} | >= 5x: {m2} |")
r3, m3 = thr(("check3", "t"), ("cl.throttle", "t"), 0.5)
print(f"| RL.CHECK, 3 rules | {med(('check3','t'))} | {r3} | >= 0.5x: {m3} | | | |")
print()
print("Server CPU per request (microseconds; ratios are the other's CPU per request over this one's,")
print("so that, like the throughput ratios, higher is better for Turnstile RL.*):")
print()
print("| algorithm | Turnstile RL.* us/req | CL.THROTTLE us/req / RL.* us/req | target | Redis + Lua us/req | Redis + Lua / Turnstile | target |")
print("|---|---:|---:|---|---:|---:|---|")
for a in ["gcra", "fixed", "sliding", "log"]:
    r1, m1 = cpu(("cl.throttle", "t"), (a, "t"), 0.9)
    r2, m2 = cpu((a, "r"), (a, "t"), 5.0)
    print(f"| {a.upper()} | {us((a,'t'))} | {r1} | >= 0.9x: {m1} | {us((a,'r'))} | {r2} | >= 5x: {m2} |")
r3, m3 = cpu(("cl.throttle", "t"), ("check3", "t"), 0.5)
print(f"| RL.CHECK, 3 rules | {us(('check3','t'))} | {r3} | >= 0.5x: {m3} | | | |")
PY
	echo
	echo "Bytes per key (MEMORY USAGE, key and value, averaged over 200 keys after one request each):"
	echo
	echo "| CL.THROTTLE | RL GCRA | RL FIXED | RL SLIDING | RL LOG (1 entry) |"
	echo "|---:|---:|---:|---:|---:|"
	echo "| ${BYTES[CL]} | ${BYTES[GCRA]} | ${BYTES[FIXED]} | ${BYTES[SLIDING]} | ${BYTES[LOG]} |"
	echo
	echo "A sliding log of 100 entries per key (50 keys): Turnstile's RL.LIMIT LOG $LOGT bytes,"
	echo "Redis's sorted set (bench/lua/rl/log.lua) $LOGR bytes: $(python3 -c "print(f'{$LOGT/$LOGR:.2f}')")x (target <= 0.5x)."
} >"$ROOT/$REPORT"
log "wrote $REPORT"
cat "$ROOT/$REPORT"
