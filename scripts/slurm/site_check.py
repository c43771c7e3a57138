# SPDX-License-Identifier: BSD-3-Clause
"""Checks against the cluster that can be made before submitting, all warnings: the account
and the environment modules. Neither needs SLURM; the module check needs the `module` command,
which login nodes have and a laptop does not (then it says so)."""

import os
import subprocess

# Where sites put the shell function `module` (Lmod or Environment Modules).
MODULE_INITS = ("/etc/profile.d/lmod.sh", "/etc/profile.d/modules.sh",
                "/usr/share/lmod/lmod/init/bash", "/usr/share/modules/init/bash")


def account_warnings(profile):
    if profile.get("account"):
        return []
    return ["account is empty: sbatch charges the job to your default account, and clusters "
            "without one (e.g. DKRZ's Levante) refuse it. Fix: --param account=PROJECT "
            "(e.g. bb1234), or set account: in the profile"]


def _module_shell_prelude():
    """Shell lines that make `module` available in a non-interactive bash, or None."""
    init = os.environ.get("FINECAST_MODULE_INIT")
    if init:  # a site's init script (or the tests' stand-in)
        return "source %s >/dev/null 2>&1 || true" % _sq(init)
    lines = []
    for var in ("MODULESHOME", "LMOD_PKG"):
        home = os.environ.get(var)
        if home:
            lines.append("[[ -f %s ]] && source %s >/dev/null 2>&1"
                         % (_sq(home + "/init/bash"), _sq(home + "/init/bash")))
    for path in MODULE_INITS:
        lines.append("[[ -f %s ]] && source %s >/dev/null 2>&1" % (_sq(path), _sq(path)))
    # `module` may already be exported into the environment (BASH_FUNC_module%%).
    return "type module >/dev/null 2>&1 || { " + " || ".join(lines) + " || true; }"


def _sq(text):
    return "'" + text.replace("'", "'\\''") + "'"


def module_warnings(modules, use=()):
    """One warning per module `module is-avail` does not know (after `module use` of the
    profile's paths), or one saying that the check was not possible here."""
    if not modules:
        return []
    script = _module_shell_prelude() + "\n" + \
        "type module >/dev/null 2>&1 || { echo NO_MODULE_COMMAND; exit 0; }\n" + \
        "".join("module use %s >/dev/null 2>&1\n" % _sq(path) for path in use) + \
        "for m in \"$@\"; do\n" + \
        "  if module is-avail \"$m\" >/dev/null 2>&1; then echo \"OK $m\"; else echo \"MISSING $m\"; fi\n" + \
        "done\n"
    try:
        r = subprocess.run(["bash", "-c", script, "module-check"] + list(modules),
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return ["could not check the modules here (%s); the job loads: %s" % (e, " ".join(modules))]
    if "NO_MODULE_COMMAND" in r.stdout:
        return ["the 'module' command is not available here, so the modules the job loads (%s) "
                "cannot be checked: a missing one stops the job at its start. Check them on the "
                "cluster's login node with: module is-avail NAME" % " ".join(modules)]
    missing = [line[len("MISSING "):] for line in r.stdout.splitlines() if line.startswith("MISSING ")]
    return ["module '%s' not found ('module is-avail %s' fails here): the job's 'module load' "
            "would stop it. Fix: --param 'modules=[...]' with names from 'module avail'" % (m, m)
            for m in missing]
