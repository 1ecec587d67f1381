#!/usr/bin/env bash
# bench/tls.sh: TLS against plain TCP throughput, in one run (issue 14).
# One Turnstile listens on a plain port and a TLS port at once (tls-auth-
# clients yes: redis-benchmark presents a client certificate); so does a
# private redis-server when it was built with TLS (Debian's is). The same
# redis-benchmark runs go to each port, interleaved over ROUNDS rounds, and
# the table gives medians and the TLS/plain ratio. Certificates (a CA, a
# server and a client certificate) are made with openssl in a temporary
# directory that is removed at exit.
#
#   bench/tls.sh                          # default run, a few minutes
#   ROUNDS=1 N=20000 bench/tls.sh         # a smoke check (seconds)
#   REDIS=0 bench/tls.sh                  # Turnstile only
#
# Writes bench/out/tls.csv and bench/TLS.md (a check with N below 100000:
# bench/out/TLS-quick.md, so it does not replace the published run).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out

ROUNDS=${ROUNDS:-3}           # interleaved rounds; medians are over these
N=${N:-200000}                # requests per redis-benchmark run at -P 1
N_P16=${N_P16:-$((N * 5))}    # requests per run at -P 16
CLIENTS=${CLIENTS:-50}        # redis-benchmark -c
RUN_TIMEOUT=${RUN_TIMEOUT:-120} # seconds any one redis-benchmark run may take
REDIS=${REDIS:-1}             # 0: Turnstile only
PORT_BASE=${PORT_BASE:-7400}  # Turnstile plain/TLS on +0/+1, redis-server on +2/+3

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { log "ERROR: $*" >&2; exit 1; }
for v in ROUNDS N N_P16 CLIENTS RUN_TIMEOUT PORT_BASE; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (got '${!v}')"
done
[[ $REDIS == 0 || $REDIS == 1 ]] || die "REDIS must be 0 or 1"
for c in openssl redis-benchmark redis-cli go timeout; do
	command -v "$c" >/dev/null || die "$c is needed (redis-tools for redis-benchmark and redis-cli)"
done
REPORT=$ROOT/bench/TLS.md
((N >= 100000)) || REPORT=$OUT/TLS-quick.md

TMP=$(mktemp -d)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$OUT"

# Pinning as bench/run.sh: servers on CPU 0, redis-benchmark on CPU 1.
SRV_PIN=() CLI_PIN=()
if command -v taskset >/dev/null && (($(nproc) >= 2)); then
	SRV_PIN=(taskset -c 0) CLI_PIN=(taskset -c 1)
	PINNING="servers on CPU 0, redis-benchmark on CPU 1"
else
	PINNING="none"
fi

log "certificates (openssl, EC P-256) in $TMP"
(
	cd "$TMP"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=bench CA" -keyout ca.key -out ca.crt
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
		-keyout server.key -out server.csr
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext
	openssl x509 -req -days 2 -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
		-extfile server.ext -out server.crt
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=bench client" \
		-keyout client.key -out client.csr
	openssl x509 -req -days 2 -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out client.crt
) >"$TMP/openssl.log" 2>&1 || { cat "$TMP/openssl.log"; die "openssl failed"; }
TLS_SERVER=(--tls-cert-file "$TMP/server.crt" --tls-key-file "$TMP/server.key" --tls-ca-cert-file "$TMP/ca.crt" --tls-auth-clients yes)
TLS_CLIENT=(--tls --cacert "$TMP/ca.crt" --cert "$TMP/client.crt" --key "$TMP/client.key")

log "building turnstile"
go build -o "$TMP/turnstile" ./cmd/turnstile

# wait_ready PORT: PING on the plain port until PONG, for at most 10 s.
wait_ready() {
	for _ in $(seq 100); do
		[[ $(redis-cli -p "$1" PING 2>/dev/null) == PONG ]] && return 0
		sleep 0.1
	done
	die "server on port $1 did not answer PING"
}

TP=$PORT_BASE TT=$((PORT_BASE + 1)) RP=$((PORT_BASE + 2)) RT=$((PORT_BASE + 3))
SERVERS=(turnstile)
mkdir -p "$TMP/ts" "$TMP/redis"
"${SRV_PIN[@]}" "$TMP/turnstile" --port "$TP" --tls-port "$TT" "${TLS_SERVER[@]}" \
	--save '' --appendonly no --dir "$TMP/ts" --loglevel warning >"$TMP/ts.log" 2>&1 &
PIDS+=($!)
wait_ready "$TP"
if ((REDIS)); then
	# A build with TLS refuses a TLS port without a certificate, by name.
	probe=$(timeout 5 redis-server --port 0 --tls-port 1 2>&1 || true)
	if [[ $probe != *tls-cert-file* ]]; then
		log "redis-server has no TLS support: Turnstile only"
	else
		"${SRV_PIN[@]}" redis-server --port "$RP" --tls-port "$RT" "${TLS_SERVER[@]}" \
			--save '' --appendonly no --dir "$TMP/redis" --daemonize no --loglevel warning >"$TMP/redis.log" 2>&1 &
		PIDS+=($!)
		wait_ready "$RP"
		SERVERS+=(redis)
	fi
fi

# bench SERVER TRANSPORT PIPELINE TEST: one redis-benchmark run; prints rps.
bench() {
	local server=$1 transport=$2 p=$3 test=$4 port n=$N args=()
	case $server/$transport in
	turnstile/plain) port=$TP ;; turnstile/tls) port=$TT ;;
	redis/plain) port=$RP ;; redis/tls) port=$RT ;;
	esac
	[[ $transport == tls ]] && args+=("${TLS_CLIENT[@]}")
	((p > 1)) && n=$N_P16
	case $test in
	SET | GET) args+=(-t "${test,,}") ;;
	CL.THROTTLE) args+=(CL.THROTTLE 'rl:__rand_int__' 15 30 60 1) ;;
	esac
	timeout "$RUN_TIMEOUT" "${CLI_PIN[@]}" redis-benchmark -p "$port" -c "$CLIENTS" -n "$n" -P "$p" \
		-r 100000 -d 16 --csv -q "${args[@]}" 2>/dev/null |
		awk -F'"' 'NR > 1 && $4 != "" { print $4; exit }'
}

CSV=$OUT/tls.csv
echo "round,server,test,pipeline,transport,rps" >"$CSV"
for round in $(seq "$ROUNDS"); do
	for server in "${SERVERS[@]}"; do
		tests=(SET GET)
		[[ $server == turnstile ]] && tests+=(CL.THROTTLE)
		for test in "${tests[@]}"; do
			for p in 1 16; do
				for transport in plain tls; do
					rps=$(bench "$server" "$transport" "$p" "$test") || true
					[[ -n $rps ]] || die "$server $transport $test -P $p: no result (timeout ${RUN_TIMEOUT}s?)"
					echo "$round,$server,$test,$p,$transport,$rps" >>"$CSV"
					log "round $round $server $test -P $p $transport: $rps req/s"
				done
			done
		done
	done
done

# The report: medians over the rounds, and TLS/plain.
{
	echo "# TLS against plain TCP"
	echo
	echo "bench/tls.sh on $(date -u +%Y-%m-%d), $(nproc) CPUs ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)); pinning: $PINNING."
	echo "ROUNDS=$ROUNDS N=$N N_P16=$N_P16, $CLIENTS clients, -r 100000, 16-byte values; TLS with client"
	echo "certificates (tls-auth-clients yes), EC P-256, the version and cipher both sides choose"
	echo "(TLS 1.3). Requests per second, medians over the rounds; every row's two runs are in the same round."
	echo
	echo "| server | test | pipeline | plain req/s | TLS req/s | TLS / plain |"
	echo "|---|---|---|---|---|---|"
	awk -F, 'NR > 1 { k = $2 "," $3 "," $4; v[k "," $5] = v[k "," $5] " " $6; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
		function median(s,   a, m, i, j, t) {
			m = split(s, a, " ")
			for (i = 2; i <= m; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
		}
		END {
			for (i = 1; i <= n; i++) {
				split(order[i], f, ",")
				pl = median(v[order[i] ",plain"]); tl = median(v[order[i] ",tls"])
				printf "| %s | %s | %s | %.0f | %.0f | %.2f |\n", f[1], f[2], f[3], pl, tl, tl / pl
			}
		}' "$CSV"
} >"$REPORT"
log "wrote $REPORT and $CSV"
cat "$REPORT"
