"""Real Python clients of kube-apiserver's metadata, pointed at a server.

Usage: metadata_calls.py URL

Runs the typed discovery calls of the generated `kubernetes` client and
kr8s' constructor and discovery, and prints one JSON object: for each call
either what it returned (names only) or {"error": "..."}. The Rust test
(tests/integration/serving/python_clients.rs) compares it with what the
server publishes.
"""

import json
import sys


def attempt(fn):
    try:
        return fn()
    except Exception as e:  # the test reports any failure, whatever its type
        return {"error": f"{type(e).__name__}: {e}"[:600]}


def typed_client(url):
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = url
    api = client.ApiClient(cfg)
    return {
        # GET /version/
        "VersionApi.get_code": attempt(lambda: client.VersionApi(api).get_code().git_version),
        # GET /api/
        "CoreApi.get_api_versions": attempt(
            lambda: client.CoreApi(api).get_api_versions().versions
        ),
        # GET /api/v1/
        "CoreV1Api.get_api_resources": attempt(
            lambda: sorted(r.name for r in client.CoreV1Api(api).get_api_resources().resources)
        ),
        # GET /apis/
        "ApisApi.get_api_versions": attempt(
            lambda: sorted(g.name for g in client.ApisApi(api).get_api_versions().groups)
        ),
        # GET /apis/apps/
        "AppsApi.get_api_group": attempt(
            lambda: client.AppsApi(api).get_api_group().preferred_version.group_version
        ),
        # GET /apis/apps/v1/
        "AppsV1Api.get_api_resources": attempt(
            lambda: sorted(r.name for r in client.AppsV1Api(api).get_api_resources().resources)
        ),
    }


def kr8s_client(url):
    import kr8s

    # The constructor asks for /version/ and raises on an error.
    api = attempt(lambda: kr8s.api(url=url))
    if isinstance(api, dict):
        return {"kr8s.api": api}
    return {
        "kr8s.api": "ok",
        "kr8s.version": attempt(lambda: api.version()["gitVersion"]),
        "kr8s.api_resources": attempt(
            lambda: sorted(
                (r.get("group") or r.get("version") or "") + "/" + r["name"]
                for r in api.api_resources()
            )
        ),
    }


def main():
    url = sys.argv[1]
    out = {}
    out.update(typed_client(url))
    out.update(kr8s_client(url))
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
