"""The HTTP server the tests' scripted judges serve on: `http.server`'s threading server
with a listen backlog that holds a run's connections.

`socketserver` listens with a backlog of 5. A judge run opens up to `concurrency` (16)
connections per backend at once, an ensemble or a panel one backend per member; the
connections past the backlog are dropped by the kernel and retried by the client's TCP only
after 1, 3, 7, 15, 31 s (SYN retransmissions), so a test took 2 s or 35 s by how its connects
raced. A real server's backlog is far larger (uvicorn's 2048, the kernel caps it at somaxconn)."""

from __future__ import annotations

from http.server import ThreadingHTTPServer


class LoopbackHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
