"""The README's promise for the recipes: copy the whole helpers/ folder into a project and
import it; a function copied out of its module alone does not run (the README says so)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_USE = textwrap.dedent("""
    import os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import helpers, keras, numpy as np
    from helpers.state_sync import copy_weights
    from helpers.inspection import describe_checkpoint
    online = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="ones")])
    target = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, kernel_initializer="zeros")])
    copy_weights(online, target, tau=1.0)
    assert all(np.array_equal(a, b) for a, b in zip(online.get_weights(), target.get_weights()))
    print(helpers.__file__)
""")


def _clean_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def test_the_readme_says_to_copy_the_whole_folder_or_install_the_package():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shelf = readme.split("**A shelf of recipes.**", 1)[1].split("\n\n", 1)[0]
    assert "copy the whole `helpers/` folder" in shelf and "pip install" in shelf
    assert "Copy from `helpers/`." not in readme


def test_a_copied_helpers_folder_works_in_a_project_of_its_own(tmp_path):
    project = tmp_path / "my_project"
    shutil.copytree(ROOT / "helpers", project / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "use.py").write_text(_USE)
    done = subprocess.run([sys.executable, "use.py"], cwd=project, env=_clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert Path(done.stdout.strip().splitlines()[-1]).parent == project / "helpers", "not the copy"


def test_copy_weights_copied_alone_fails_as_the_readme_warns(tmp_path):
    source = (ROOT / "helpers" / "state_sync.py").read_text(encoding="utf-8")
    function = re.search(r"^def copy_weights\(.*?(?=^def |\Z)", source, re.S | re.M)[0]
    (tmp_path / "mine.py").write_text("import keras, numpy as np, tensorflow as tf\n\n" + function)
    script = _USE.replace("from helpers.state_sync import copy_weights", "from mine import copy_weights")
    script = script.replace("import helpers, keras", "import keras").replace("print(helpers.__file__)", "")
    script = script.replace("from helpers.inspection import describe_checkpoint\n", "")
    (tmp_path / "use.py").write_text(script)
    done = subprocess.run([sys.executable, "use.py"], cwd=tmp_path, env=_clean_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "NameError" in done.stderr


# matplotlib and the optional packages blocked: the import fails as it would where they are missing.
_IMPORT_ALL_WITHOUT = textwrap.dedent("""
    import importlib, os, pkgutil, sys
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    for name in sys.argv[1:]:
        sys.modules[name] = None
    import helpers
    failed = []
    for module in pkgutil.walk_packages(helpers.__path__, "helpers."):
        try:
            importlib.import_module(module.name)
        except ImportError as error:
            failed.append(f"{module.name}: {error}")
    assert not failed, failed
    print(helpers.__file__)
""")

_OPTIONAL = ["matplotlib", "tf_keras", "onnx", "onnxruntime", "ai_edge_litert"]


def test_every_module_of_a_copied_folder_imports_without_matplotlib_or_the_optional_packages(tmp_path):
    project = tmp_path / "my_project"
    shutil.copytree(ROOT / "helpers", project / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "import_all.py").write_text(_IMPORT_ALL_WITHOUT)
    done = subprocess.run([sys.executable, "import_all.py", *_OPTIONAL], cwd=project, env=_clean_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert Path(done.stdout.strip().splitlines()[-1]).parent == project / "helpers", "not the copy"


def test_the_readme_names_what_a_copied_folder_needs_and_prints_its_example():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shelf = " ".join(readme.split("**A shelf of recipes.**", 1)[1].split("\n## ", 1)[0].split())
    for package in ["`tensorflow`", "`keras`", "`numpy`", "`h5py`", "`matplotlib` only for the plots",
                    "`tf-keras` only for `helpers.keras2`", *(f"`{name}`" for name in ("onnx", "onnxruntime"))]:
        assert package in shelf, package
    assert 'print(describe_checkpoint("runs/model-1000"))' in shelf, "outside the interactive prompt it must print"
