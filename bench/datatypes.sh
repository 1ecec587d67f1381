#!/usr/bin/env bash
# bench/datatypes.sh: the data-type targets of issue 10, Turnstile and a
# private redis-server side by side in one run (see bench/README.md).
#
#   bench/datatypes.sh                 # ROUNDS=3, about 6 minutes
#   ROUNDS=1 N=50000 D=3 bench/datatypes.sh   # a quick check
#
# 1. the default redis-benchmark run (every test, -c 50, -n N), per test;
# 2. HINCRBY, LPUSH, LPOP, SADD, ZADD at -P 16 (-c 50 -r 100000);
# 3. the sorted-set sliding log (bench/cmd/slidelog: MULTI ZREMRANGEBYSCORE
#    ZADD ZCARD PEXPIRE EXEC, 50 members per key, KEYS keys, -c 50 -P 16):
#    transactions per second, and RSS per key after loading the keys;
# 4. tracked reads through rueidis's client-side cache (bench/cmd/tracked).
# Servers share CPU 0, clients run on CPU 1 (taskset), A/B alternating.
# Medians over ROUNDS; writes bench/DATATYPES.md and bench/out/datatypes.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
ROUNDS=${ROUNDS:-3}
N=${N:-100000}     # requests per redis-benchmark test
KEYS=${KEYS:-100000}
D=${D:-10}         # seconds per sliding-log run
TMO=${TMO:-300}    # seconds any one client run may take
PARTS=${PARTS:-default,p16,slidelog,tracked} # which parts to run
REPORT=${REPORT:-bench/DATATYPES.md}         # where the tables go
has() { [[ ,$PARTS, == *,$1,* ]]; }

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
for v in ROUNDS N KEYS D TMO; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"; done
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; }

mkdir -p "$OUT"
go build -o "$OUT/turnstile" ./cmd/turnstile
go build -o "$OUT/slidelog" ./bench/cmd/slidelog
go build -o "$OUT/tracked" ./bench/cmd/tracked
if (($(nproc) >= 2)); then SRV=(taskset -c 0); CLI=(taskset -c 1); PIN="servers on CPU 0, clients on CPU 1"
else SRV=(); CLI=(); PIN="none (one CPU)"; fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A PID PORT
start() { # start NAME KIND
	local p; p=$(free_port)
	if [[ $2 == turnstile ]]; then
		"${SRV[@]}" "$OUT/turnstile" --port "$p" --bind 127.0.0.1 --save '' --appendonly no >"$OUT/dt-$1.log" 2>&1 &
	else
		"${SRV[@]}" redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$OUT/dt-$1.log" 2>&1 &
	fi
	PID[$1]=$! PORT[$1]=$p
	for _ in $(seq 100); do redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
	die "$1 did not start"
}
stop() { kill "${PID[$1]}" 2>/dev/null || true; wait "${PID[$1]}" 2>/dev/null || true; }
trap 'for n in "${!PID[@]}"; do stop "$n"; done' EXIT
rss() { awk '/^VmRSS/ {print $2 * 1024}' "/proc/${PID[$1]}/status"; }

CSV=$OUT/datatypes.csv
echo "part,test,server,round,value" >"$CSV"
start t turnstile
start r redis
log "pinning: $PIN; turnstile :${PORT[t]}, redis :${PORT[r]}"

for round in $(seq "$ROUNDS"); do
	order=(t r); ((round % 2 == 0)) && order=(r t)
	for s in "${order[@]}"; do
		has default || continue
		log "round $round: default redis-benchmark run on $s"
		redis-cli -p "${PORT[$s]}" flushall >/dev/null
		timeout "$TMO" "${CLI[@]}" redis-benchmark -p "${PORT[$s]}" -n "$N" --csv 2>/dev/null |
			awk -F'","' -v s="$s" -v r="$round" 'NR > 1 { gsub(/"/, "", $1); print "default," $1 "," s "," r "," $2 }' >>"$CSV" ||
			log "redis-benchmark failed on $s (a test it needs is missing?)"
	done
	has p16 || continue
	for t in "HINCRBY h:__rand_int__ f 1" "LPUSH l:__rand_int__ v" "LPOP l:__rand_int__" "SADD s:__rand_int__ __rand_int__" "ZADD z:__rand_int__ __rand_int__ m:__rand_int__"; do
		for s in "${order[@]}"; do
			v=$(timeout "$TMO" "${CLI[@]}" redis-benchmark -p "${PORT[$s]}" -c 50 -P 16 -r 100000 -n $((N * 5)) --csv $t 2>/dev/null |
				awk -F'","' 'NR == 2 { print $2 }') || v=failed
			echo "p16,${t%% *},$s,$round,$v" >>"$CSV"
		done
	done
done

# Sliding log: fresh servers, RSS before and after loading KEYS keys.
for s in t r; do
	has slidelog || break
	stop "$s"
	start "$s" "$([[ $s == t ]] && echo turnstile || echo redis)"
	before=$(rss "$s")
	timeout "$TMO" "${CLI[@]}" "$OUT/slidelog" -addr "127.0.0.1:${PORT[$s]}" -prefill -keys "$KEYS" -members 50 -run=false ||
		log "sliding-log prefill failed on $s"
	sleep 1
	after=$(rss "$s")
	echo "slidelog,rss_per_key,$s,1,$(((after - before) / KEYS))" >>"$CSV"
done
for round in $(seq "$ROUNDS"); do
	has slidelog || break
	order=(t r); ((round % 2 == 0)) && order=(r t)
	for s in "${order[@]}"; do
		log "round $round: sliding log on $s"
		v=$(timeout "$TMO" "${CLI[@]}" "$OUT/slidelog" -addr "127.0.0.1:${PORT[$s]}" -c 50 -P 16 -keys "$KEYS" -members 50 -d "${D}s") || v=failed
		echo "slidelog,tx_per_sec,$s,$round,$v" >>"$CSV"
	done
done

# Tracked reads: rueidis with its client-side cache, 8 readers over 10,000
# keys while a writer invalidates 5,000 keys a second.
for round in $(seq "$ROUNDS"); do
	has tracked || break
	order=(t r); ((round % 2 == 0)) && order=(r t)
	for s in "${order[@]}"; do
		log "round $round: tracked reads on $s"
		out=$(timeout "$TMO" "${CLI[@]}" "$OUT/tracked" -addr "127.0.0.1:${PORT[$s]}" -keys 10000 -readers 8 -writes 5000 -d "${D}s") || out="failed failed"
		echo "tracked,reads_per_sec,$s,$round,${out% *}" >>"$CSV"
		echo "tracked,cache_hit_share,$s,$round,${out#* }" >>"$CSV"
	done
done

# Report: medians per (part, test, server), and the ratio Turnstile / Redis.
{
	echo "# Data types: Turnstile next to Redis (bench/datatypes.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs ($(lscpu 2>/dev/null | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}')), Redis $(redis-server --version | awk '{sub(/^v=/, "", $3); print $3}'), pinning: $PIN."
	echo "Command: \`ROUNDS=$ROUNDS N=$N KEYS=$KEYS D=$D PARTS=$PARTS bench/datatypes.sh\`. Medians of $ROUNDS rounds, servers alternating;"
	echo "the last column is the median of the per-round ratios (range in brackets)."
	echo
	python3 - "$CSV" <<'PY'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
med, rounds = {}, {}
for r in rows:
    try: v = float(r["value"])
    except ValueError: continue
    med.setdefault((r["part"], r["test"], r["server"]), []).append(v)
    rounds.setdefault((r["part"], r["test"], r["round"]), {})[r["server"]] = v
med = {k: statistics.median(v) for k, v in med.items()}
ratios = {}
for (p, t, _), sv in rounds.items():
    if sv.get("r") and "t" in sv:
        ratios.setdefault((p, t), []).append(sv["t"] / sv["r"])
def table(part, title, unit, higher_better=True):
    tests = [t for (p, t, s) in med if p == part and s == "r"]
    if not tests: return
    print(f"## {title}\n\n| test | Turnstile {unit} | Redis {unit} | Turnstile / Redis |\n|---|---:|---:|---:|")
    for t in dict.fromkeys(tests):
        a, b = med.get((part, t, "t")), med.get((part, t, "r"))
        rs = sorted(ratios.get((part, t), []))
        ratio = f"{statistics.median(rs):.2f}x ({rs[0]:.2f}-{rs[-1]:.2f})" if rs else "missing"
        fmt = (lambda v: f"{v:,.3f}") if b is not None and b < 10 else (lambda v: f"{v:,.0f}")
        fa = fmt(a) if a is not None else "failed"
        print(f"| {t} | {fa} | {fmt(b)} | {ratio} |")
    print()
table("default", "Default redis-benchmark run (-c 50, -P 1)", "req/s")
table("p16", "At -P 16 (-c 50, -r 100000)", "req/s")
table("slidelog", "Sorted-set sliding log (50 members per key; -c 50 -P 16)", "")
table("tracked", "Tracked reads: rueidis DoCache GET, 8 readers, 10,000 keys, 5,000 SETs/s invalidating", "")
PY
} >"$ROOT/$REPORT"
log "wrote $REPORT"
cat "$ROOT/$REPORT"
