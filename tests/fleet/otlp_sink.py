#!/usr/bin/env python3
"""OTLP/HTTP trace sink for the fleet test: decodes each /v1/traces body with
the official OpenTelemetry protobuf bindings (the `opentelemetry-proto`
package) and counts spans per node (`host.name` resource attribute).

Listens on 127.0.0.1 on a free port and prints the port as its first line.
GET /counts answers {node: {"spans", "cuda_spans", "pids", "bad"}} as JSON,
where "bad" counts spans whose ids are not 16/8 bytes. Stops on stdin EOF.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

LOCK = threading.Lock()
COUNTS = {}


def record(request):
    for rs in request.resource_spans:
        attrs = {kv.key: kv.value for kv in rs.resource.attributes}
        node = attrs["host.name"].string_value if "host.name" in attrs else ""
        pid = attrs["process.pid"].int_value if "process.pid" in attrs else -1
        with LOCK:
            c = COUNTS.setdefault(node, {"spans": 0, "cuda_spans": 0, "pids": set(), "bad": 0})
            c["pids"].add(pid)
            for ss in rs.scope_spans:
                for span in ss.spans:
                    c["spans"] += 1
                    if any(a.key == "cuda.function" for a in span.attributes):
                        c["cuda_spans"] += 1
                    if len(span.trace_id) != 16 or len(span.span_id) != 8:
                        c["bad"] += 1


class Handler(BaseHTTPRequestHandler):
    def reply(self, status, ctype, body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            return self.reply(404, "text/plain", b"only /v1/traces")
        if self.headers.get("Content-Type") != "application/x-protobuf":
            return self.reply(415, "text/plain", b"binary protobuf only")
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except Exception as e:  # a body the official bindings cannot decode
            return self.reply(400, "text/plain", str(e).encode())
        record(request)
        self.reply(200, "application/x-protobuf", ExportTraceServiceResponse().SerializeToString())

    def do_GET(self):
        if self.path != "/counts":
            return self.reply(404, "text/plain", b"GET /counts")
        with LOCK:
            out = {n: dict(c, pids=len(c["pids"])) for n, c in COUNTS.items()}
        self.reply(200, "application/json", json.dumps(out).encode())

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
