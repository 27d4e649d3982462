"""A local stand-in for Battlelog: real-shaped payloads, latency, per-IP limits, faults, counters.

Start it with `bf4ps simulate battlelog` (server.run), `server.start_in_thread(config)` (tests) or
`server.spawn(config)` (a child process). Control and counters: GET/POST /__sim/config,
GET /__sim/stats, POST /__sim/reset. Importing this package has no side effects; payload templates
are built when the app starts.
"""
