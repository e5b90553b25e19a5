#!/usr/bin/env python3
"""A non-TypeScript client: the standard library only, written from seed-api.md and CONTRACT.md.

Usage: rest_client.py BASE_URL APPLICATION_ID SECRET_KEY EMAIL
Creates a user, an organization, lists organizations with a search, and prints one JSON object with what it saw.
"""
import json
import sys
import urllib.error
import urllib.request


def call(base, app_id, key, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + key)
    request.add_header("x-application-id", app_id)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def main():
    base, app_id, key, email = sys.argv[1:5]
    created_status, created = call(base, app_id, key, "POST", "/v1/users", {"primary_email": email})
    duplicate_status, duplicate = call(base, app_id, key, "POST", "/v1/users", {"primary_email": email.upper()})
    call(base, app_id, key, "POST", "/v1/organizations", {"name": "Python Guild"})
    listed_status, listed = call(base, app_id, key, "GET", "/v1/organizations?search=python&limit=10")
    print(json.dumps({
        "created_status": created_status,
        "user": created["data"],
        "duplicate_status": duplicate_status,
        "duplicate_code": duplicate["error"]["code"],
        "listed_status": listed_status,
        "organizations": listed["data"],
    }))


if __name__ == "__main__":
    main()
