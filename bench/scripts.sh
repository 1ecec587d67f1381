#!/usr/bin/env bash
# bench/scripts.sh: the scripting targets of issue 11, side by side in one
# run (see bench/README.md): limiter scripts sent with EVALSHA by
# redis-benchmark (-c 50, -P 16 and -P 1, 100,000 random keys) to
#   tl  Turnstile running every script in Lua (--turnstile-native-scripts no)
#   tn  Turnstile running known scripts natively (the default)
#   r   a private redis-server
# Scripts: the seed lessons' token bucket (seed 000 §6) and redis_rate v10's
# allowN (GCRA), their exact texts from libtest/testdata.
#
#   bench/scripts.sh                      # ROUNDS=3
#   ROUNDS=1 N=100000 bench/scripts.sh    # a quick check
#
# Servers share CPU 0, clients run on CPU 1 (taskset), order rotating each
# round. Medians over ROUNDS; writes bench/SCRIPTS.md and bench/out/scripts.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
ROUNDS=${ROUNDS:-3}
N=${N:-300000}   # requests per redis-benchmark run at -P 16 (a tenth at -P 1)
TMO=${TMO:-300}  # seconds any one client run may take
REPORT=${REPORT:-bench/SCRIPTS.md}

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
for v in ROUNDS N TMO; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"; done
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; }

mkdir -p "$OUT"
go build -o "$OUT/turnstile" ./cmd/turnstile
if (($(nproc) >= 2)); then SRV=(taskset -c 0); CLI=(taskset -c 1); PIN="servers on CPU 0, clients on CPU 1"
else SRV=(); CLI=(); PIN="none (one CPU)"; fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A PID PORT
start() { # start NAME
	local p; p=$(free_port)
	case $1 in
	tl) "${SRV[@]}" "$OUT/turnstile" --port "$p" --bind 127.0.0.1 --save '' --appendonly no --turnstile-native-scripts no >"$OUT/sc-$1.log" 2>&1 & ;;
	tn) "${SRV[@]}" "$OUT/turnstile" --port "$p" --bind 127.0.0.1 --save '' --appendonly no >"$OUT/sc-$1.log" 2>&1 & ;;
	r) "${SRV[@]}" redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >"$OUT/sc-$1.log" 2>&1 & ;;
	esac
	PID[$1]=$! PORT[$1]=$p
	for _ in $(seq 100); do redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && return 0; sleep 0.1; done
	die "$1 did not start"
}
stop() { kill "${PID[$1]}" 2>/dev/null || true; wait "${PID[$1]}" 2>/dev/null || true; }
trap 'for n in "${!PID[@]}"; do stop "$n"; done' EXIT

# name|script file|arguments after the key
TESTS=(
	"seed_token_bucket|libtest/testdata/seed000-token-bucket.lua|10 20 1000 1"
	"redis_rate_allowN|libtest/testdata/scripts/redis_rate-allowN.lua|100 10 1 1"
)

CSV=$OUT/scripts.csv
echo "test,pipeline,server,round,value" >"$CSV"
for s in tl tn r; do start "$s"; done
log "pinning: $PIN; tl :${PORT[tl]}, tn :${PORT[tn]}, r :${PORT[r]}"
declare -A SHA
for t in "${TESTS[@]}"; do
	IFS='|' read -r name file _ <<<"$t"
	for s in tl tn r; do
		sha=$(redis-cli -p "${PORT[$s]}" -x script load <"$file")
		[[ -z ${SHA[$name]:-} || ${SHA[$name]} == "$sha" ]] || die "$name: SHA1 differs between servers"
		SHA[$name]=$sha
	done
done

for round in $(seq "$ROUNDS"); do
	order=(tl tn r)
	for ((i = 0; i < (round - 1) % 3; i++)); do order=("${order[@]:1}" "${order[0]}"); done
	for t in "${TESTS[@]}"; do
		IFS='|' read -r name _ args <<<"$t"
		for P in 16 1; do
			n=$N; ((P == 1)) && n=$((N / 10))
			for s in "${order[@]}"; do
				log "round $round: $name -P $P on $s"
				# shellcheck disable=SC2086
				v=$(timeout "$TMO" "${CLI[@]}" redis-benchmark -p "${PORT[$s]}" -c 50 -P "$P" -r 100000 -n "$n" --csv \
					EVALSHA "${SHA[$name]}" 1 "rl:$name:__rand_int__" $args 2>/dev/null |
					awk -F'","' 'NR == 2 { print $2 }') || v=failed
				echo "$name,$P,$s,$round,$v" >>"$CSV"
			done
		done
	done
done

{
	echo "# Scripts: Turnstile next to Redis (bench/scripts.sh)"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs ($(lscpu 2>/dev/null | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}')), Redis $(redis-server --version | awk '{sub(/^v=/, "", $3); print $3}'), pinning: $PIN."
	echo "Command: \`ROUNDS=$ROUNDS N=$N bench/scripts.sh\`. EVALSHA requests per second, redis-benchmark -c 50 -r 100000;"
	echo "medians of $ROUNDS rounds, order rotating; ratios are medians of the per-round ratios (range in brackets)."
	echo
	python3 - "$CSV" <<'PY'
import csv, sys, statistics
rows = list(csv.DictReader(open(sys.argv[1])))
vals, rounds = {}, {}
for r in rows:
    try: v = float(r["value"])
    except ValueError: continue
    vals.setdefault((r["test"], r["pipeline"], r["server"]), []).append(v)
    rounds.setdefault((r["test"], r["pipeline"], r["round"]), {})[r["server"]] = v
def ratio(t, p, s):
    rs = sorted(sv[s] / sv["r"] for (tt, pp, _), sv in rounds.items() if tt == t and pp == p and sv.get("r") and s in sv)
    return f"{statistics.median(rs):.2f}x ({rs[0]:.2f}-{rs[-1]:.2f})" if rs else "missing"
med = lambda k: f"{statistics.median(vals[k]):,.0f}" if k in vals else "failed"
print("| script | -P | Turnstile, Lua | Turnstile, native | Redis | Lua / Redis | native / Redis |")
print("|---|---:|---:|---:|---:|---:|---:|")
for (t, p) in dict.fromkeys((t, p) for (t, p, s) in vals):
    print(f"| {t} | {p} | {med((t, p, 'tl'))} | {med((t, p, 'tn'))} | {med((t, p, 'r'))} | {ratio(t, p, 'tl')} | {ratio(t, p, 'tn')} |")
PY
} >"$ROOT/$REPORT"
log "wrote $REPORT"
cat "$ROOT/$REPORT"
