#!/usr/bin/env python3
"""A small OpenID Connect provider for RecordSync's tests of the web sign-in page.

It runs the authorization code flow as real providers do, with Authlib's JOSE (Debian's
python3-authlib) for the keys and tokens: /authorize signs in one test person at once (no
page of its own) and answers with a redirect (response_mode=query) or a form the browser
posts (form_post, as Sign in with Apple); /token takes each code once, checks the client, the
redirect_uri and the PKCE verifier (S256), and answers an ID token (RS256) carrying the
authorization request's nonce; /jwks publishes the key. The client authenticates with a
client secret, or (--apple-public-key) with a JWT it signs with ES256, as Sign in with Apple's
web flow asks.

Usage: oidc-provider.py --port PORT --client-id ID (--client-secret S | --apple-public-key PEM)
       [--subject SUB] [--email ADDRESS]
"""
import argparse
import base64
import hashlib
import html
import json
import secrets
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from authlib.jose import JsonWebKey, jwt

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--client-id", required=True)
parser.add_argument("--client-secret")
parser.add_argument("--apple-public-key")
parser.add_argument("--subject", default="person-1")
parser.add_argument("--email", default="person-1@example.com")
options = parser.parse_args()

issuer = f"http://127.0.0.1:{options.port}"
key = JsonWebKey.generate_key("RSA", 2048, is_private=True)
key_id = key.as_dict(is_private=False)["kid"] if "kid" in key.as_dict(is_private=False) else "test-key"
public_jwks = {"keys": [dict(key.as_dict(is_private=False), kid=key_id, use="sig", alg="RS256")]}
apple_key = open(options.apple_public_key).read() if options.apple_public_key else None
codes = {}  # code -> the authorization request's parameters; each taken once


def pkce_matches(verifier, challenge):
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == challenge


def client_authenticated(form):
    if form.get("client_id") != options.client_id:
        return False
    given = form.get("client_secret", "")
    if options.client_secret is not None:
        return secrets.compare_digest(given, options.client_secret)
    try:
        claims = jwt.decode(given, apple_key)
        claims.validate()
    except Exception:
        return False
    return claims.get("sub") == options.client_id and claims.get("aud") == issuer and claims.header.get("alg") == "ES256"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/jwks":
            return self.answer(200, json.dumps(public_jwks))
        if url.path == "/.well-known/openid-configuration":
            return self.answer(200, json.dumps({"issuer": issuer, "authorization_endpoint": issuer + "/authorize",
                                                "token_endpoint": issuer + "/token", "jwks_uri": issuer + "/jwks"}))
        if url.path != "/authorize":
            return self.answer(404, json.dumps({"error": "not_found"}))
        if query.get("client_id") != options.client_id or query.get("response_type") != "code" \
                or "openid" not in query.get("scope", "").split() or query.get("code_challenge_method") != "S256" \
                or not query.get("code_challenge") or not query.get("redirect_uri"):
            return self.answer(400, json.dumps({"error": "invalid_request"}))
        code = secrets.token_urlsafe(24)
        codes[code] = query
        answer = {"code": code, "state": query.get("state", "")}
        if query.get("response_mode") == "form_post":
            fields = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in answer.items())
            page = (f'<!doctype html><form id="f" method="post" action="{html.escape(query["redirect_uri"])}">{fields}'
                    '<button type="submit">Continue</button></form><script>document.getElementById("f").submit()</script>')
            return self.answer(200, page, "text/html; charset=utf-8")
        separator = "&" if "?" in query["redirect_uri"] else "?"
        return self.answer(302, "", "text/plain", [("Location", query["redirect_uri"] + separator + urllib.parse.urlencode(answer))])

    def do_POST(self):
        if self.path != "/token":
            return self.answer(404, json.dumps({"error": "not_found"}))
        length = int(self.headers.get("Content-Length", "0"))
        form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
        if not client_authenticated(form):
            return self.answer(401, json.dumps({"error": "invalid_client"}))
        request = codes.pop(form.get("code", ""), None)
        if form.get("grant_type") != "authorization_code" or request is None \
                or form.get("redirect_uri") != request["redirect_uri"] \
                or not pkce_matches(form.get("code_verifier", ""), request["code_challenge"]):
            return self.answer(400, json.dumps({"error": "invalid_grant"}))
        now = int(time.time())
        claims = {"iss": issuer, "sub": options.subject, "aud": options.client_id, "iat": now, "exp": now + 600,
                  "email": options.email, "email_verified": True}
        if "nonce" in request:
            claims["nonce"] = request["nonce"]
        id_token = jwt.encode({"alg": "RS256", "kid": key_id}, claims, key).decode()
        return self.answer(200, json.dumps({"access_token": secrets.token_urlsafe(24), "token_type": "Bearer",
                                            "expires_in": 600, "id_token": id_token}))


server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
print("ready", flush=True)
server.serve_forever()
