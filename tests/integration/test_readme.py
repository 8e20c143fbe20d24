"""The README's walk-throughs, run as written: a newcomer types them in order."""

import os
import re
import subprocess

import mrunlib as M


def _block_after(heading):
    # run.sh stages README.md beside the suite; from a checkout it is the repo's.
    staged = os.path.join(os.path.dirname(M.HERE), "README.md")
    with open(staged if os.path.exists(staged) else os.path.join(M.REPO, "README.md")) as f:
        text = f.read()
    section = text[text.index(heading):]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_readme_oci_walkthrough_runs_as_written(tmp_path):
    script = _block_after("### OCI runtime verbs")
    # `mrun` as typed, but with a state root of the test's own: the README's fixed
    # names (c1, c2) must not meet another run's containers.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "mrun"
    wrapper.write_text(f'#!/bin/sh\nexec {M.MRUN} --root {tmp_path}/state "$@"\n')
    os.chmod(wrapper, 0o755)
    env = M.base_env(PATH=f"{bindir}:{M.DEFAULT_PATH}")
    p = subprocess.run(["bash", "-euxo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"the README's OCI walk-through failed:\n{p.stdout}\n{p.stderr}"
    assert "hello" in p.stdout, p.stdout
    for name in ("c1", "c2"):
        subprocess.run([str(wrapper), "delete", "--force", name], env=env, capture_output=True)
