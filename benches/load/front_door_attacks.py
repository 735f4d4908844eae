#!/usr/bin/env python3
"""Issue 30's figures for the front door, against a release build.

A raw downstream (legacy discovery for the core group; any watch answered
200 and streamed BURST_KB at once, then held open) behind
`serve --front-door true`:

1. `upgrade`: CONNS clients each send a watch with `Upgrade: x-anything`
   and read what comes; the proxy's RSS (VmRSS) idle, at the peak while
   all are open, and 10 s after they all left.
2. `encoded`: CONNS watches spelled `?%77atch=1` held open, then another
   client's GET: its status.
3. `unread`: CONNS watches whose clients read nothing past the status
   line; the proxy's RSS idle and 3 s after the last one began, per
   connection (the burst waits at the downstream).

    python3 benches/load/front_door_attacks.py BIN upgrade [CONNS] [BURST_KB] [CLIENTS]
    python3 benches/load/front_door_attacks.py BIN encoded [CONNS]
    python3 benches/load/front_door_attacks.py BIN unread [CONNS] [BURST_KB]

CLIENTS spreads the upgrade run's connections over that many client
addresses (127.0.0.1, 127.0.0.2, ...): each client address has its own
share of the long-running places (`maxLongRunningRequestsPerClient`, 500),
so one address alone gets 429 past 500 watches.

See BENCHMARKS.md, "The front door".
"""
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.parse


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


DISCOVERY = {
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:1"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": ["get", "list", "watch"]}]},
}


async def downstream(reader, writer, burst):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            target = head.split(b" ", 2)[1].decode()
            path, _, query = target.partition("?")
            params = urllib.parse.parse_qs(query)
            if path in DISCOVERY:
                body = json.dumps(DISCOVERY[path]).encode()
            elif params.get("watch") in (["1"], ["true"]):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                event = b'{"type":"ADDED","object":{"kind":"Pod","x":"' + b"x" * 60000 + b'"}}\n'
                for _ in range(max(1, burst // len(event))):
                    writer.write(b"%x\r\n%s\r\n" % (len(event), event))
                await writer.drain()
                await reader.read()  # held until the proxy closes
                return
            else:
                body = json.dumps({"kind": "Pod", "metadata": {"name": "small"}}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def get(port, target):
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(f"GET {target} HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n".encode())
    data = await r.read()
    w.close()
    return int(data.split(b" ", 2)[1]) if data else 0


async def watch(port, head, read, opened, source="127.0.0.1"):
    r, w = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        w.write(head)
        line = await r.readline()
        opened.append(line.split(b" ", 2)[1].decode() if line else "-")
        while read:
            if not await r.read(65536):
                break
    finally:
        if read:
            w.close()
    return r, w


async def main():
    binary, mode = sys.argv[1], sys.argv[2]
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else (1500 if mode == "upgrade" else 600)
    burst = int(sys.argv[4]) * 1000 if len(sys.argv) > 4 else 900_000
    clients = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server = await asyncio.start_server(lambda r, w: downstream(r, w, burst), "127.0.0.1", 0, backlog=4096)
    down = server.sockets[0].getsockname()[1]
    port = free_port()
    proxy = subprocess.Popen(
        [binary, "serve", "--listen", f"127.0.0.1:{port}", "--front-door", "true",
         "--downstream", f"kube=http://127.0.0.1:{down}", "--poll-interval", "1h"],
        stdout=subprocess.DEVNULL, stderr=open("/tmp/front_door_attacks.log", "w"))
    try:
        for _ in range(600):
            try:
                if await get(port, "/api/v1/namespaces/default/pods/small") == 200:
                    break
            except OSError:
                pass
            await asyncio.sleep(0.1)
        else:
            sys.exit("the proxy did not route /api/v1")
        for _ in range(20):
            await get(port, "/api/v1/namespaces/default/pods/small")
        await asyncio.sleep(1)
        idle = rss_kib(proxy.pid)
        opened = []
        if mode == "upgrade":
            head = (b"GET /api/v1/namespaces/default/pods?watch=1 HTTP/1.1\r\nHost: p\r\n"
                    b"Connection: Upgrade\r\nUpgrade: x-anything\r\n\r\n")
            tasks = [asyncio.create_task(watch(port, head, True, opened, f"127.0.0.{1 + i % clients}"))
                     for i in range(conns)]
            # Sampled until every answer began and 5 s more (the bursts
            # read), 60 s at most.
            peak = idle
            deadline = time.monotonic() + 60
            all_open = None
            while time.monotonic() < deadline:
                peak = max(peak, rss_kib(proxy.pid))
                if all_open is None and len(opened) >= conns:
                    all_open = time.monotonic()
                if all_open is not None and time.monotonic() > all_open + 5:
                    break
                await asyncio.sleep(0.2)
            codes = {c: opened.count(c) for c in set(opened)}
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(10)
            after = rss_kib(proxy.pid)
            fds = len(os.listdir(f"/proc/{proxy.pid}/fd"))
            print(f"upgrade: {conns} watches with Upgrade: x-anything from {clients} client address(es), "
                  f"{burst // 1000} KB bursts, read; "
                  f"answers {codes}; RSS idle {idle / 1024:.1f} MiB, peak {peak / 1024:.1f} MiB "
                  f"(+{(peak - idle) / 1024:.1f}), 10 s after they left {after / 1024:.1f} MiB "
                  f"(+{(after - idle) / 1024:.1f}), {fds} descriptors open")
        elif mode == "unread":
            head = b"GET /api/v1/namespaces/default/pods?watch=1 HTTP/1.1\r\nHost: p\r\n\r\n"
            held = [await watch(port, head, False, opened) for _ in range(conns)]
            await asyncio.sleep(3)
            now = rss_kib(proxy.pid)
            codes = {c: opened.count(c) for c in set(opened)}
            print(f"unread: {conns} watches of {burst // 1000} KB bursts not read, answers {codes}; "
                  f"RSS idle {idle / 1024:.1f} MiB, then {now / 1024:.1f} MiB, "
                  f"{(now - idle) / conns:.0f} KiB a connection")
            for _, w in held:
                w.close()
        else:
            head = b"GET /api/v1/namespaces/default/pods?%77atch=1 HTTP/1.1\r\nHost: p\r\n\r\n"
            held = await asyncio.gather(*[watch(port, head, False, opened) for _ in range(conns)],
                                        return_exceptions=True)
            codes = {c: opened.count(c) for c in set(opened)}
            other = [await get(port, "/api/v1/namespaces/default/pods/small") for _ in range(3)]
            print(f"encoded: {conns} watches spelled ?%77atch=1 held open, answers {codes}; "
                  f"another client's GET: {other}")
            for h in held:
                if isinstance(h, tuple):
                    h[1].close()
    finally:
        proxy.terminate()
        proxy.wait()


if __name__ == "__main__":
    asyncio.run(main())
