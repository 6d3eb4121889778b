"""The command line (`megagen ...`, `python -m megagen.demo`) and how megagen is installed."""
import subprocess
import sys
from importlib.metadata import entry_points


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_console_script_is_megagen_cli():
    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "megagen"]
    assert script.value == "megagen.cli:main"


def test_help_describes_every_command_and_exits_0():
    r = _run("-m", "megagen.cli", "--help")
    assert r.returncode == 0, r.stderr
    for command in ("demo", "bench"):
        assert f"  {command} " in r.stdout, r.stdout


def test_no_or_unknown_command_is_an_error():
    for args in ((), ("serve",)):
        r = _run("-m", "megagen.cli", *args)
        assert r.returncode == 2 and "usage: megagen COMMAND" in r.stderr, (args, r.stderr)


def test_bad_input_at_the_command_line_is_one_line_not_a_traceback():
    for args in (("-m", "megagen.cli", "demo"), ("-m", "megagen.demo")):
        r = _run(*args, "--model", "nonexistent")
        assert r.returncode == 2, r.stdout + r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("megagen demo: error: 'nonexistent' is neither a preset"), (
            r.stderr)


def test_module_help_names_the_command():
    r = _run("-m", "megagen.demo", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: megagen demo"), r.stdout


def test_models_install_inside_megagen_and_leave_a_users_models_alone(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("MINE = True\n")
    r = _run("-c", "import models; from megagen import models as presets; "
                   "print(models.MINE, callable(presets.random_model), presets.__name__)", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.split() == ["True", "True", "megagen.models"], r.stdout + r.stderr
    r = _run("-c", "import models", cwd=tmp_path / "models")  # no top-level `models` is installed
    assert r.returncode == 1 and "No module named 'models'" in r.stderr, r.stdout + r.stderr
