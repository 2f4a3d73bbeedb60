#!/usr/bin/env bash
# Make sure Slurm and munge exist for the matrix's Slurm tests (tests/test_matrix_slurm.py starts its own
# slurmctld, slurmd and munged from them): install Debian's slurm-wlm and munge when running as root with apt-get
# (CI), otherwise print one warning line; never fails the build by itself. The packages' services are not started
# (no systemd in CI; a policy-rc.d denies it during the install).
set -u
if command -v sbatch >/dev/null 2>&1 && [ -x /usr/sbin/slurmctld ] && [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/munged ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure_slurm: installing slurm-wlm and munge for the Slurm tests" >&2
  export DEBIAN_FRONTEND=noninteractive
  policy=/usr/sbin/policy-rc.d
  made_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && made_policy=1
  fi
  apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
  status=$?
  [ "$made_policy" = "1" ] && rm -f "$policy"
  if [ "$status" = "0" ]; then
    exit 0
  fi
  echo "ensure_slurm: warning: slurm-wlm/munge install failed; the Slurm tests will skip (or fail when CI=true)" >&2
  exit 0
fi
echo "ensure_slurm: warning: Slurm not found and cannot install it (need root + apt-get); the Slurm tests will skip" >&2
exit 0
