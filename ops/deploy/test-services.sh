#!/usr/bin/env bash
# Everything the test suite talks to, started (or installed) here, so the README's test
# command works on a fresh machine of this kind: PostgreSQL at 127.0.0.1:5432 (started when
# installed), NATS JetStream at 127.0.0.1:4222, Debian's Chromium for the browser tests
# (Playwright cannot download one here). Fails, never skips: one FAIL line per service that
# cannot be had, exit 1. Network namespaces (ip netns) for the lease trials are checked. Debian's
# xmlsec1, the independent verifier of the KSA manifests' signatures and, with the openssl
# command, of their encryption (tests/store/projections/test_ksa.py), is installed here too.
set -uo pipefail

sudo=""
[ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo="sudo -n"
failed=0
apt_install() {  # the package lists are refreshed once, only when an install needs them
  $sudo apt-get install -y -q "$@" >/dev/null 2>&1 || { $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q "$@" >/dev/null 2>&1; }
}
wait_for() {  # a check, tried for up to 30 s
  for _ in $(seq 1 30); do "$@" && return 0; sleep 1; done
  return 1
}

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
if ! pg_up; then
  if ls /etc/postgresql/*/main >/dev/null 2>&1; then
    echo "PostgreSQL is not answering; starting it"
    $sudo pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  fi
  wait_for pg_up || { echo "FAIL: PostgreSQL at 127.0.0.1:5432 cannot be reached (not installed, or it would not start)" >&2; failed=1; }
fi

nats_up() { (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; }
if ! nats_up; then
  [ -x /usr/sbin/nats-server ] || { echo "nats-server is missing; installing it"; apt_install nats-server; }
  echo "nats-server is not answering; starting it"
  $sudo start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
    -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log || true
  wait_for nats_up || { echo "FAIL: nats-server at 127.0.0.1:4222 cannot be reached" >&2; failed=1; }
fi

# The lease trials' hosts are network namespaces (ops/bench/netns.py): root and iproute2. The
# services stay on 127.0.0.1; a forwarder on the namespaces' bridge relays to them.
command -v ip >/dev/null || { echo "iproute2 is missing; installing it"; apt_install iproute2; }
probe="clprobe$$"
if $sudo ip netns add "$probe" >/dev/null 2>&1; then
  $sudo ip netns del "$probe" >/dev/null 2>&1 || true
else
  echo "FAIL: network namespaces cannot be made (ip netns add; root needed): tests/e2e/processes/test_lease_hosts.py needs them" >&2
  failed=1
fi

if [ ! -x /usr/bin/chromium ]; then
  echo "Chromium is missing; installing it for the browser tests"
  apt_install chromium
  [ -x /usr/bin/chromium ] || { echo "FAIL: /usr/bin/chromium is missing and could not be installed (apt-get install -y chromium)" >&2; failed=1; }
fi
if ! command -v xmlsec1 >/dev/null; then
  echo "xmlsec1 is missing; installing it for the KSA signature tests"
  apt_install xmlsec1
  command -v xmlsec1 >/dev/null || { echo "FAIL: xmlsec1 is missing and could not be installed (apt-get install -y xmlsec1)" >&2; failed=1; }
fi
if ! command -v openssl >/dev/null; then
  echo "openssl is missing; installing it for the KSA decryption tests"
  apt_install openssl
  command -v openssl >/dev/null || { echo "FAIL: openssl is missing and could not be installed (apt-get install -y openssl)" >&2; failed=1; }
fi
exit $failed
