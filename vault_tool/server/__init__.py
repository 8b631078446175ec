"""The MCP surface: two tools over stdio and Streamable HTTP; no business logic (see docs/mcp.md).

  tools.py      the two tools (schemas from schema/, titles, annotations) and the one call wrapper
  schemas.py    the tool schemas as tools/list sends them: self-contained and lean
  render.py     the text a host shows for a result or a refusal; recalled text framed as data
  runtime.py    the opened vault, its watcher, worker threads, logs and the audit trail
  shared_log.py a log file the vault's servers append to and rotate together
  handshake.py  answering `initialize` before the SDK has finished importing
  early.py      the answers known without the SDK (ping, tools/list), in wire form
  before_sdk.py the lines read and the requests answered while the SDK imports
  app.py        the SDK's low-level Server wired to tools.py (the only module here that builds it)
  stdio.py      `vault-tool serve`: stdin/stdout, EOF and signals
  http.py       `vault-tool serve --http`: Host/Origin checks, bearer tokens, rate limit

Only app.py, stdio.py and http.py import `mcp`, and only when a server starts.
"""
