# SPDX-License-Identifier: BSD-3-Clause
"""Where the job's finecast plugin is and what its config says.

The launcher needs the plugin library (is it a CUDA build?) and the resolved plugin config (the
device, hence the GPUs to request; sample.output and checkpoint.dir, hence one folder per array
task). They come from the host run file or replay config (its `plugins` list or the &comin_nml of
its `comin_namelist`), or, for an executable program such as ICON, from the profile. The config
is resolved by the build's own finecast-config (every default and check in one place, the
plugin's); without it, from configs/reference.yaml and the file.
"""

import os
import subprocess

import yaml

import namelist
import textfile
from slurm_profile import REPO_ROOT, scalar_text

LIBRARY_STEM = "libfinecast_comin"


class Plugin:
    """finecast's entry in the run: its library, its config and the options' overrides."""

    def __init__(self, library, config, overrides, where, comm="", index=None):
        self.library = library        # absolute path
        self.config = config          # absolute path of the plugin config, or None
        self.overrides = overrides    # ["key=value", ...] from the options string
        self.where = where            # where this entry was found, for messages
        self.comm = comm              # the entry's comm name ("" = none)
        self.index = index            # its index in the run file's `plugins` list (None: a namelist's)


def split_options(options):
    """ComIn options as the plugin splits them (plugin/config.cpp split_options): blanks
    separate words, '...' or "..." keep blanks inside a word."""
    words, word, in_word, quote = [], "", False, None
    for ch in options:
        if quote:
            if ch == quote:
                quote = None
            else:
                word += ch
        elif ch in "'\"":
            quote, in_word = ch, True
        elif ch.isspace():
            if in_word:
                words.append(word)
            word, in_word = "", False
        else:
            word += ch
            in_word = True
    if in_word:
        words.append(word)
    return words


def quote_option(word):
    """One word of an options string (coupling/program/mpi_program.cpp quote_option)."""
    if not any(c in word for c in " \t'\""):
        return word
    if "'" not in word:
        return "'" + word + "'"
    return '"' + word + '"'


def _is_finecast(name, library):
    return (name or "").strip().lower() == "finecast" or \
        os.path.basename(library or "").startswith(LIBRARY_STEM)


def find_in_run_file(run_path, workdir, problems):
    """finecast's entry in a finecast-host run file or finecast-replay config; None when the run
    loads no finecast plugin (or the file cannot be read: the program will say why)."""
    try:
        with open(run_path) as f:
            data = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as e:
        problems.warning("%s: cannot read its plugin list (%s); the GPU and CUDA checks are "
                         "skipped" % (run_path, str(e).splitlines()[0]))
        return None
    if not isinstance(data, dict):
        return None
    entries = []
    if data.get("comin_namelist"):
        nml = os.path.join(workdir, str(data["comin_namelist"]))
        try:
            found = namelist.plugin_entries(textfile.read(nml), nml) or {}
        except (OSError, namelist.NamelistError) as e:
            problems.error("%s: comin_namelist: %s" % (run_path, e))
            return None
        for i in sorted(found):
            e = found[i]
            entries.append((e.get("name"), e.get("plugin_library"), e.get("options", ""),
                            "%s: &comin_nml plugin_list(%d)" % (nml, i),
                            e.get("comm", ""), None))
    elif isinstance(data.get("plugins"), list):
        for i, p in enumerate(data["plugins"]):
            if isinstance(p, dict):
                entries.append((p.get("name"), p.get("library"), scalar_text(p.get("options")),
                                "%s: plugins[%d]" % (run_path, i), scalar_text(p.get("comm")), i))
    for name, library, options, where, comm, index in entries:
        if _is_finecast(name, library):
            words = split_options(options or "")
            config = os.path.join(workdir, words[0]) if words else None
            return Plugin(os.path.join(workdir, str(library)), config, words[1:], where,
                          comm.strip(), index)
    return None


def with_comm(data, index, comm):
    """A host run file / replay config (a dict) whose `plugins[index]` (finecast's entry) has
    the comm name `comm`: a copy, the rest unchanged."""
    data = dict(data)
    plugins = list(data["plugins"])
    entry = dict(plugins[index])
    entry["comm"] = comm
    plugins[index] = entry
    data["plugins"] = plugins
    return data


def read_config(plugin, overrides, bin_dir, problems):
    """The plugin config with every override applied and every default filled in, as a dict, or
    None when it cannot be known. A config finecast-config rejects is an error here, before
    the job waits in the queue only to fail at start-up."""
    if plugin.config is None:
        return None
    if not os.path.isfile(plugin.config):
        problems.error("%s: the plugin config %s does not exist" % (plugin.where, plugin.config))
        return None
    all_overrides = plugin.overrides + overrides
    tool = os.path.join(bin_dir, "finecast-config")
    if os.access(tool, os.X_OK):
        argv = [tool, plugin.config]
        for o in all_overrides:
            argv += ["--set", o]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            r = None
            problems.warning("%s could not run (%s); reading %s without it"
                             % (tool, e, plugin.config))
        if r is not None and r.returncode == 0:
            try:
                return yaml.safe_load(r.stdout)
            except yaml.YAMLError:
                problems.warning("%s printed something that is not YAML; reading %s without it"
                                 % (tool, plugin.config))
        elif r is not None and r.returncode == 1:
            problems.error("the plugin config is invalid (checked with %s%s):\n  %s"
                           % (tool,
                              " and the overrides " + " ".join(all_overrides) if all_overrides else "",
                              r.stderr.strip().replace("\n", "\n  ")))
            return None
        elif r is not None:  # e.g. 127: a library of the build missing on this node
            problems.warning("%s failed to run (exit %d: %s); reading %s without it"
                             % (tool, r.returncode, r.stderr.strip().splitlines()[-1:] or "",
                                plugin.config))
    return _read_config_here(plugin.config, all_overrides, problems)


def _read_config_here(path, overrides, problems):
    """Without finecast-config: reference.yaml's defaults, the file, then the overrides."""
    def merge(base, top):
        for k, v in top.items():
            if isinstance(v, dict) and isinstance(base.get(k), dict):
                merge(base[k], v)
            else:
                base[k] = v
    try:
        with open(os.path.join(REPO_ROOT, "configs", "reference.yaml")) as f:
            config = yaml.safe_load(f) or {}
        with open(path) as f:
            merge(config, yaml.safe_load(f) or {})
    except (OSError, yaml.YAMLError) as e:
        problems.error("%s: %s" % (path, str(e).splitlines()[0]))
        return None
    for o in overrides:
        key, _, raw = o.partition("=")
        node = config
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        try:
            node[parts[-1]] = yaml.safe_load(raw) if raw != "" else ""
        except yaml.YAMLError:
            node[parts[-1]] = raw
    return config


def lookup(config, key, default=None):
    node = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def gpus_used(device, trainers_on_node=1):
    """GPUs finecast uses on a node for a device setting: one per trainer rank on the node for
    cuda, cuda:0 or auto (which picks CUDA when there is one); none for cpu and mps."""
    device = scalar_text(device).strip().lower()
    if device in ("cuda", "cuda:0", "auto"):
        return max(1, trainers_on_node)
    return 0


def trainers_on_busiest_node(config, overrides, nodes, ntasks_per_node):
    """The most trainer ranks (train.ranks) one node holds, as the plugin places them on the
    host's ranks in node order: the first at coupling.trainer_rank, the others spread evenly
    over all ranks (train.placement: spread) or next to it (packed)."""
    def setting(key, default):
        if key in overrides:
            return overrides[key]
        return lookup(config, key, default) if config else default
    try:
        ranks = int(scalar_text(setting("train.ranks", 1)))
        first = int(scalar_text(setting("coupling.trainer_rank", 0)))
        nodes, per_node = int(nodes), int(ntasks_per_node)
    except (TypeError, ValueError):
        return 1
    size = nodes * per_node
    if ranks < 1 or size < 1:
        return 1
    packed = scalar_text(setting("train.placement", "spread")).strip() == "packed"
    counts = {}
    for k in range(min(ranks, size)):
        offset = k if packed else k * size // ranks
        node = ((first + offset) % size) // per_node
        counts[node] = counts.get(node, 0) + 1
    return max(counts.values())
