#!/usr/bin/env bash
# bench/run.sh: Turnstile and a private redis-server measured side by side
# in one run (issue 3). See bench/README.md for what each number means.
#
#   bench/run.sh                      # default run, a few minutes
#   ROUNDS=1 N=200000 KEYS=100000 bench/run.sh      # quick check
#   SCALING=1 bench/run.sh            # also key-count and connection scaling
#
# Writes bench/out/results.csv, bench/RESULTS.md and bench/*.svg.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH=$ROOT/bench
OUT=$BENCH/out

ROUNDS=${ROUNDS:-3}            # interleaved rounds; medians are over these
N=${N:-300000}                 # requests per redis-benchmark run at -P 1
N_P16=${N_P16:-$((N * 5))}     # requests per run at -P 16
KEYS=${KEYS:-1000000}          # distinct keys for the memory measurement
SCALING=${SCALING:-0}          # 1: also run the scaling part
SCALING_MAX=${SCALING_MAX:-6}  # largest key count is 10^SCALING_MAX (6 or 7)
RUN_TIMEOUT=${RUN_TIMEOUT:-300} # seconds any one benchmark or load may take
# Scheduling priority of servers and clients: root raises it a little so
# other work on a shared machine disturbs the measurement less. NICE=0: off.
if ((EUID == 0)); then NICE=${NICE:--10}; else NICE=${NICE:-0}; fi
CLIENTS=50                     # -c of the main table
RANDKEYS=100000                # -r of the main table

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }

for v in ROUNDS N N_P16 KEYS SCALING_MAX RUN_TIMEOUT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (got '${!v}')"
done
[[ $SCALING_MAX == 6 || $SCALING_MAX == 7 ]] || die "SCALING_MAX must be 6 or 7"
[[ $NICE =~ ^-?[0-9]+$ ]] || die "NICE must be an integer (got '$NICE')"

# ---------------------------------------------------------------- setup --

install_missing() {
	local pkgs=()
	command -v redis-server >/dev/null || pkgs+=(redis-server)
	command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null || pkgs+=(redis-tools)
	command -v taskset >/dev/null && command -v lscpu >/dev/null || pkgs+=(util-linux)
	command -v timeout >/dev/null || pkgs+=(coreutils)
	((${#pkgs[@]})) || return 0
	log "installing ${pkgs[*]} (apt-get)"
	local sudo=
	if ((EUID != 0)); then
		command -v sudo >/dev/null || die "need root (or sudo) to install ${pkgs[*]}"
		sudo=sudo
	fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}
install_missing
command -v go >/dev/null || die "Go (1.26 or later, see go.mod) must be on PATH; Debian's golang package is too old"

mkdir -p "$OUT"
rm -f "$OUT"/results.csv "$OUT"/commands.tsv "$OUT"/meta.txt "$OUT"/*.log

log "building turnstile, loadgen, report"
go build -o "$OUT/turnstile" ./cmd/turnstile
go build -o "$OUT/loadgen" ./bench/cmd/loadgen
go build -o "$OUT/report" ./bench/cmd/report

# Many connections (-c 1000) need file descriptors on both sides.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# in_cpu_list LIST CPU: is CPU in a kernel CPU list such as "0,64" or "0-1"?
in_cpu_list() {
	local part lo hi parts
	IFS=, read -ra parts <<<"$1"
	for part in "${parts[@]}"; do
		lo=${part%-*} hi=${part#*-}
		((lo <= $2 && $2 <= hi)) && return 0
	done
	return 1
}

NCPU=$(nproc)
if ((NCPU >= 2)); then
	# Servers on CPU 0; the client on CPU 1, unless CPU 1 is a hyperthread
	# of the same core as CPU 0 and another CPU is not.
	CLI_CPU=1
	siblings=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null || echo 0)
	if in_cpu_list "$siblings" 1; then
		for c in $(seq 2 $((NCPU - 1))); do
			if ! in_cpu_list "$siblings" "$c"; then
				CLI_CPU=$c
				break
			fi
		done
	fi
	SRV_PIN=(taskset -c 0)
	CLI_PIN=(taskset -c "$CLI_CPU")
	PINNING="servers on CPU 0, redis-benchmark and loaders on CPU $CLI_CPU (taskset)"
else
	SRV_PIN=()
	CLI_PIN=()
	PINNING="none: only $NCPU CPU, so servers and redis-benchmark share it (not comparable to pinned runs)"
fi
if ((NICE != 0)); then
	SRV_PIN=(nice -n "$NICE" "${SRV_PIN[@]}")
	CLI_PIN=(nice -n "$NICE" "${CLI_PIN[@]}")
	PINNING+="; nice $NICE"
fi
log "pinning: $PINNING"

# --------------------------------------------------------------- servers --

TPID= RPID= TPORT= RPORT=

cleanup() {
	local pid
	for pid in $TPID $RPID; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in $TPID $RPID; do
		wait "$pid" 2>/dev/null || true
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
	local p i
	for i in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		port_in_use "$p" || { echo "$p"; return 0; }
	done
	die "no free loopback port found"
}

# wait_ready PORT PID: PING until PONG, for at most 10 s.
wait_ready() {
	local i
	for i in $(seq 1 100); do
		kill -0 "$2" 2>/dev/null || return 1
		[[ $(timeout 2 redis-cli -h 127.0.0.1 -p "$1" PING 2>/dev/null) == PONG ]] && return 0
		sleep 0.1
	done
	return 1
}

stop_pid() {
	local pid=$1 i
	[[ -n $pid ]] || return 0
	kill "$pid" 2>/dev/null || return 0
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

start_turnstile() {
	stop_pid "$TPID"
	TPID=
	local try
	for try in 1 2 3; do
		TPORT=$(free_port)
		# Like the Redis below: no snapshots, no append-only log.
		"${SRV_PIN[@]}" "$OUT/turnstile" --port "$TPORT" --bind 127.0.0.1 --loglevel warning \
			--save '' --appendonly no --dir "$OUT" >>"$OUT/turnstile.log" 2>&1 &
		TPID=$!
		wait_ready "$TPORT" "$TPID" && return 0
		stop_pid "$TPID"
	done
	die "turnstile did not start (see $OUT/turnstile.log)"
}

start_redis() {
	stop_pid "$RPID"
	RPID=
	local try
	for try in 1 2 3; do
		RPORT=$(free_port)
		"${SRV_PIN[@]}" redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$OUT" --logfile "$OUT/redis.log" --daemonize no --maxclients 10000 &
		RPID=$!
		wait_ready "$RPORT" "$RPID" && return 0
		stop_pid "$RPID"
	done
	die "redis-server did not start (see $OUT/redis.log)"
}

# Scripts are lost when redis-server restarts, so load them on every start.
load_scripts() {
	GCRA_SHA=$(rcli redis SCRIPT LOAD "$(cat "$BENCH/lua/gcra.lua")")
	TB_SHA=$(rcli redis SCRIPT LOAD "$(cat "$BENCH/lua/token_bucket.lua")")
	[[ $GCRA_SHA =~ ^[0-9a-f]{40}$ && $TB_SHA =~ ^[0-9a-f]{40}$ ]] ||
		die "SCRIPT LOAD failed: '$GCRA_SHA' '$TB_SHA'"
}

start_servers() {
	start_turnstile
	start_redis
	load_scripts
	log "turnstile pid $TPID port $TPORT; redis-server pid $RPID port $RPORT"
}

port_of() { if [[ $1 == turnstile ]]; then echo "$TPORT"; else echo "$RPORT"; fi; }
pid_of() { if [[ $1 == turnstile ]]; then echo "$TPID"; else echo "$RPID"; fi; }

# rcli SERVER ARGS...: one redis-cli command, bounded in time.
rcli() {
	local port
	port=$(port_of "$1")
	shift
	timeout 30 redis-cli -h 127.0.0.1 -p "$port" "$@"
}

alive() {
	local pid
	pid=$(pid_of "$1")
	kill -0 "$pid" 2>/dev/null || die "$1 (pid $pid) is not running any more (see $OUT/$1.log / redis.log)"
}

# ----------------------------------------------------------- measuring --

CSV=$OUT/results.csv
echo "round,server,workload,pipeline,clients,rps,p50,p99,p999,phase,keys,requests,seconds,server_cpu_s,rss_before,rss_after,used_before,used_after" >"$CSV"

# csv_row FIELD...: quote every field that holds a comma or quote.
csv_row() {
	local out= f
	for f in "$@"; do
		if [[ $f == *[,\"]* ]]; then f="\"${f//\"/\"\"}\""; fi
		out+="${out:+,}$f"
	done
	echo "$out" >>"$CSV"
}

# record_cmd PHASE SERVER WORKLOAD PIPELINE CLIENTS KEYS COMMAND...
record_cmd() {
	local head="$1"$'\t'"$2"$'\t'"$3"$'\t'"$4"$'\t'"$5"$'\t'"$6"
	shift 6
	printf '%s\t%s\n' "$head" "$*" >>"$OUT/commands.tsv"
}

# parse_bench FILE -> "rps p50 p99 p999 seconds" (latencies in ms). p99.9 is the smallest latency
# L that redis-benchmark prints with at least 99.9% of requests <= L (its
# percentile and cumulative-distribution lines), an upper bound.
parse_bench() {
	tr '\r' '\n' <"$1" | awk '
		/throughput summary:/ { rps = $3 }
		/requests completed in/ { secs = $5 }
		/^ *avg +min +p50 +p95 +p99 +max/ { want = 1; next }
		want && NF == 6 { p50 = $3; p99 = $5; want = 0 }
		/^[0-9.]+% <= [0-9.]+ milliseconds/ {
			pct = $1; sub(/%/, "", pct)
			if (pct + 0 >= 99.9 && (p999 == "" || $3 + 0 < p999 + 0)) p999 = $3
		}
		END {
			if (rps == "" || p50 == "") exit 1
			printf "%s %s %s %s %s\n", rps, p50, p99, (p999 == "" ? p99 : p999), (secs == "" ? 0 : secs)
		}'
}

RUNS=0
# bench ROUND PHASE SERVER WORKLOAD PIPELINE CLIENTS REQUESTS RANDKEYS FLUSH COMMAND...
bench() {
	local round=$1 phase=$2 server=$3 workload=$4 pipeline=$5 clients=$6 requests=$7 rkeys=$8 flush=$9
	shift 9
	local port
	port=$(port_of "$server")
	alive "$server"
	if [[ $flush == flush ]]; then
		[[ $(rcli "$server" FLUSHALL) == OK ]] || die "FLUSHALL on $server failed"
	fi
	local cmd=("${CLI_PIN[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$clients" -n "$requests"
		-r "$rkeys" -P "$pipeline" "$@")
	local raw=$OUT/last-benchmark.txt cpu0 cpu1
	RUNS=$((RUNS + 1))
	cpu0=$(cpu_ticks "$(pid_of "$server")")
	if ! timeout "$RUN_TIMEOUT" "${cmd[@]}" >"$raw" 2>&1; then
		tail -c 2000 "$raw" >&2 || true
		die "redis-benchmark failed or timed out after ${RUN_TIMEOUT}s: ${cmd[*]}"
	fi
	if grep -q 'Error from server' "$raw"; then
		grep -m3 'Error from server' "$raw" >&2
		die "$server answered errors to: ${cmd[*]}"
	fi
	cpu1=$(cpu_ticks "$(pid_of "$server")")
	local parsed
	parsed=$(parse_bench "$raw") || die "cannot parse redis-benchmark output of: ${cmd[*]} (see $raw)"
	local rps p50 p99 p999 secs cpu
	read -r rps p50 p99 p999 secs <<<"$parsed"
	cpu=$(awk -v t=$((cpu1 - cpu0)) -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')
	csv_row "$round" "$server" "$workload" "$pipeline" "$clients" "$rps" "$p50" "$p99" "$p999" \
		"$phase" "$rkeys" "$requests" "$secs" "$cpu" "" "" "" ""
	record_cmd "$phase" "$server" "$workload" "$pipeline" "$clients" "$rkeys" "${cmd[*]}"
	log "$(printf 'r%s %-6s %-9s %-16s P%-2s c%-4s %10s req/s  p50 %s p99 %s p99.9 %s ms  server CPU %ss/%ss' \
		"$round" "$phase" "$server" "$workload" "$pipeline" "$clients" "$rps" "$p50" "$p99" "$p999" "$cpu" "$secs")"
}

CLK_TCK=$(getconf CLK_TCK)

# cpu_ticks PID: user + system CPU time of the process so far, in clock ticks.
cpu_ticks() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

rss_bytes() {
	awk '/^VmRSS:/ { print $2 * 1024 }' "/proc/$1/status"
}

used_memory() {
	rcli "$1" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'
}

# load_keys SERVER COUNT: create COUNT distinct keys with loadgen | redis-cli --pipe.
load_keys() {
	local server=$1 count=$2 port log=$OUT/pipe-$1.log
	port=$(port_of "$server")
	if ! timeout "$RUN_TIMEOUT" "${CLI_PIN[@]}" "$OUT/loadgen" -mode "$server" -n "$count" |
		timeout "$RUN_TIMEOUT" "${CLI_PIN[@]}" redis-cli -h 127.0.0.1 -p "$port" --pipe >"$log" 2>&1; then
		cat "$log" >&2
		die "loading $count keys into $server failed or timed out"
	fi
	grep -q "errors: 0, replies: $count\$" "$log" || { cat "$log" >&2; die "loading keys into $server: errors"; }
}

# memory ROUND PHASE SERVER COUNT: RSS and used_memory before and after loading.
memory() {
	local round=$1 phase=$2 server=$3 count=$4 pid workload
	pid=$(pid_of "$server")
	alive "$server"
	if [[ $server == turnstile ]]; then
		workload="CL.THROTTLE k 0 1 3600"
		record_cmd "$phase" "$server" "$workload" "" "" "$count" \
			"${CLI_PIN[*]} bench/out/loadgen -mode turnstile -n $count | ${CLI_PIN[*]} redis-cli -h 127.0.0.1 -p $TPORT --pipe   # CL.THROTTLE key:%012d 0 1 3600"
	else
		workload="SET k ns PX 3600000"
		record_cmd "$phase" "$server" "$workload" "" "" "$count" \
			"${CLI_PIN[*]} bench/out/loadgen -mode redis -n $count | ${CLI_PIN[*]} redis-cli -h 127.0.0.1 -p $RPORT --pipe   # SET key:%012d <19-digit ns> PX 3600000"
	fi
	sleep 1
	local rss0 used0 rss1 used1 dbsize
	rss0=$(rss_bytes "$pid")
	used0=$(used_memory "$server")
	load_keys "$server" "$count"
	sleep 1
	rss1=$(rss_bytes "$pid")
	used1=$(used_memory "$server")
	dbsize=$(rcli "$server" DBSIZE)
	[[ $dbsize == "$count" ]] || log "WARNING: $server holds $dbsize keys after loading $count"
	csv_row "$round" "$server" "$workload" "" "" "" "" "" "" "$phase" "$count" "$count" "" "" \
		"$rss0" "$rss1" "$used0" "$used1"
	log "$(awk -v r="$round" -v ph="$phase" -v s="$server" -v n="$count" -v a="$rss0" -v b="$rss1" -v c="$used0" -v d="$used1" \
		'BEGIN { printf "r%s %-6s %-9s %9d keys: RSS %.1f B/key, used_memory %.1f B/key (RSS %d -> %d)", r, ph, s, n, (b - a) / n, (d - c) / n, a, b }')"
}

# ---------------------------------------------------------------- checks --

start_servers

# One call of each workload with redis-cli, so a wrong reply fails loudly
# before any timing is done.
check_reply() {
	local want=$1 got
	shift
	got=$(rcli "$@" | tr '\n' ' ')
	[[ $got == "$want" ]] || die "sanity check: '$*' replied '$got', want '$want'"
}
check_reply "0 16 15 -1 2 " turnstile CL.THROTTLE check:1 15 30 60
check_reply "0 16 15 -1 2 " redis EVALSHA "$GCRA_SHA" 1 check:1 15 30 60
check_reply "1 15 " redis EVALSHA "$TB_SHA" 1 check:2 0.5 16 1
check_reply "1 " turnstile INCR check:3
check_reply "1 " redis INCR check:3

# ------------------------------------------------------------------ meta --

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
	echo "nproc: $NCPU"
	echo "kernel: $(uname -sr)"
	echo "memory: $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "redis: $(redis-server --version)"
	echo "redis-benchmark: $(redis-benchmark --version)"
	echo "go: $(go version)"
	echo "turnstile: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD -- . 2>/dev/null || echo ' (with local changes)')"
	echo "pinning: $PINNING"
	echo "settings: ROUNDS=$ROUNDS N=$N N_P16=$N_P16 KEYS=$KEYS SCALING=$SCALING SCALING_MAX=$SCALING_MAX"
	echo "main: -c $CLIENTS -r $RANDKEYS, FLUSHALL before every run"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/meta.txt"

# ------------------------------------------------------- main throughput --

# Workloads of the main table: SERVER|NAME|ARGS. Listed so that the servers
# alternate where they can; each round starts at a different entry.
main_workloads() {
	printf '%s\n' \
		"turnstile|CL.THROTTLE|CL.THROTTLE key:__rand_int__ 15 30 60" \
		"redis|INCR|INCR key:__rand_int__" \
		"turnstile|INCR|INCR key:__rand_int__" \
		"redis|SET|SET key:__rand_int__ v" \
		"redis|Lua GCRA|EVALSHA $GCRA_SHA 1 key:__rand_int__ 15 30 60" \
		"redis|Lua token bucket|EVALSHA $TB_SHA 1 key:__rand_int__ 0.5 16 1"
}

T0=$SECONDS
for round in $(seq 1 "$ROUNDS"); do
	mapfile -t wl < <(main_workloads)
	count=${#wl[@]}
	for pipeline in 1 16; do
		requests=$N
		((pipeline == 1)) || requests=$N_P16
		for i in $(seq 0 $((count - 1))); do
			IFS='|' read -r server name args <<<"${wl[$(((i + round - 1) % count))]}"
			read -ra argv <<<"$args"
			bench "$round" main "$server" "$name" "$pipeline" "$CLIENTS" "$requests" "$RANDKEYS" flush "${argv[@]}"
		done
	done
done
log "main table done in $((SECONDS - T0)) s"

# ---------------------------------------------------------------- memory --

# Fresh processes, so neither has heap left over from the runs above.
start_servers
memory 1 memory turnstile "$KEYS"
memory 1 memory redis "$KEYS"

# --------------------------------------------------------------- scaling --

if [[ $SCALING == 1 ]]; then
	T0=$SECONDS
	# Live keys: load K keys with a 1 h TTL, then run a limiter whose calls
	# stay allowed (max_burst 1000000, 1 per hour), so every call writes and
	# no key expires during the run.
	for exp in $(seq 3 "$SCALING_MAX"); do
		[[ $exp == 4 ]] && continue
		k=$((10 ** exp))
		start_servers
		memory 1 keys turnstile "$k"
		memory 1 keys redis "$k"
		for round in $(seq 1 "$ROUNDS"); do
			bench "$round" keys turnstile "CL.THROTTLE" 16 "$CLIENTS" "$N_P16" "$k" keep \
				CL.THROTTLE key:__rand_int__ 1000000 1 3600
			bench "$round" keys redis "Lua GCRA" 16 "$CLIENTS" "$N_P16" "$k" keep \
				EVALSHA "$GCRA_SHA" 1 key:__rand_int__ 1000000 1 3600
		done
	done

	# Connections: the main table's workloads at -P 1 with 1 ... 1000 clients.
	start_servers
	for round in $(seq 1 "$ROUNDS"); do
		for c in 1 10 100 1000; do
			requests=$N
			((c >= 100)) || requests=$((N / (c == 1 ? 10 : 2)))
			bench "$round" conns turnstile "CL.THROTTLE" 1 "$c" "$requests" "$RANDKEYS" flush \
				CL.THROTTLE key:__rand_int__ 15 30 60
			bench "$round" conns redis "INCR" 1 "$c" "$requests" "$RANDKEYS" flush \
				INCR key:__rand_int__
			bench "$round" conns redis "Lua GCRA" 1 "$c" "$requests" "$RANDKEYS" flush \
				EVALSHA "$GCRA_SHA" 1 key:__rand_int__ 15 30 60
		done
	done
	log "scaling done in $((SECONDS - T0)) s"
fi

cleanup
TPID= RPID=

# ---------------------------------------------------------------- report --

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"
echo "duration: $((SECONDS / 60)) min $((SECONDS % 60)) s, $RUNS redis-benchmark runs" >>"$OUT/meta.txt"
cp "$CSV" "$BENCH/results.csv"
log "$RUNS benchmark runs; writing bench/RESULTS.md and charts"
"$OUT/report" -csv "$BENCH/results.csv" -meta "$OUT/meta.txt" -commands "$OUT/commands.tsv" -dir "$BENCH"
log "done in $((SECONDS / 60)) min $((SECONDS % 60)) s: bench/RESULTS.md, bench/results.csv, bench/*.svg"
