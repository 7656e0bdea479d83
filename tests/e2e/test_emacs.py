"""A real Emacs, in batch mode, with docs/editors.md's Eglot configuration as written: `M-x eglot`
in a card, the run started from a code action, the review question answered with a plain RET
(its default must be the harmless `Show diff`, and without showDocument the server says where
the diff is), `cardrunner-reject` with a reason that reaches the model, Accept as a code action,
and the card Done on disk. Skipped when Emacs or its eglot package is not installed (Debian:
`emacs-nox elpa-eglot`; Emacs 29+ has eglot built in).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.lsp import (
    GOOD_APP,
    Project,
    final,
    front_matter,
    make_project,
    tool,
    turn,
    verify_greeting,
)

EDITORS = Path(__file__).resolve().parents[2] / "docs" / "editors.md"
EMACS = shutil.which("emacs")


def has_package(feature: str) -> bool:
    """Whether a batch Emacs can `require` this feature after `package-initialize`."""
    if EMACS is None:
        return False
    probe = subprocess.run(
        [EMACS, "--batch", "--eval", f"(progn (package-initialize) (require '{feature}))"],
        capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return probe.returncode == 0


# What every driver shares: the packages, what the user was asked and shown (`cr-questions`,
# `cr-messages`), `cr-wait` (poll a predicate for 90 s), `cr-card-says` (the card's state on
# disk) and `cr-check-buffer` (the card's buffer once it shows a state, and a save of it).
ELISP_PRELUDE = r"""
(require 'cl-lib)
(require 'json)
(package-initialize)
;; A batch Emacs reads no events, so file notifications never arrive: the documented
;; auto-revert-mode polls instead (an interactive Emacs reverts on the notification)
(setq auto-revert-use-notify nil auto-revert-interval 0.2)
(defvar cr-questions nil)
(defvar cr-messages nil)
(defun cr-wait (what pred)
  (let ((deadline (+ (float-time) 90)))
    (while (not (funcall pred))
      (when (> (float-time) deadline) (error "timed out waiting for %s" what))
      (accept-process-output nil 0.05))))
(defun cr-card-says (state)
  (with-temp-buffer
    (insert-file-contents (getenv "CARD"))
    (re-search-forward (concat "^state: " state "$") nil t)))
(defvar cr-buffer nil)
(defun cr-file-bytes ()
  (with-temp-buffer
    (set-buffer-multibyte nil)
    (insert-file-contents-literally (getenv "CARD"))
    (buffer-string)))
(defun cr-check-buffer (state)
  "Once the card's buffer shows STATE: whether it was modified, its text, the file's bytes
then, and the file's bytes after a save (forced: Emacs writes no unmodified buffer)."
  (with-current-buffer (find-buffer-visiting (getenv "CARD"))
    (cr-wait (concat "the buffer to show " state)
             (lambda () (save-excursion
                          (goto-char (point-min))
                          (re-search-forward (concat "^state: " state "$") nil t))))
    (let ((modified (buffer-modified-p)) (before (cr-file-bytes)))
      (set-buffer-modified-p t)
      (save-buffer)
      (setq cr-buffer `((modified . ,(if modified t :json-false))
                        (text . ,(buffer-substring-no-properties (point-min) (point-max)))
                        (before . ,(decode-coding-string before 'utf-8))
                        (after . ,(decode-coding-string (cr-file-bytes) 'utf-8)))))))
"""

# And how every driver ends: `cr-main` run, an error kept as an `ERROR:` message, both lists
# written as JSON to $OUT, Emacs ended.
ELISP_END = r"""
(condition-case err
    (cr-main)
  (error (push (format "ERROR: %S" err) cr-messages)))
(with-temp-file (getenv "OUT")
  (insert (json-encode `((questions . ,(vconcat (reverse cr-questions)))
                         (messages . ,(vconcat (reverse cr-messages)))
                         (buffer . ,cr-buffer)))))
(kill-emacs 0)
"""


def driver(client: str, setup: str) -> str:
    """A batch Emacs script for `client` (eglot or lsp-mode), whose `setup` defines the user's
    answers and the client's own `cr-action` and `cr-main`."""
    return f"{ELISP_PRELUDE}(require '{client})\n(require 'markdown-mode)\n{setup}{ELISP_END}"


# The Eglot user: a plain RET on the first review question, the code actions as functions.
EGLOT_USER = r"""
;; The user: a plain RET on the first review question (Eglot offers the first action), then
;; dismisses the questions (and uses the code actions and the reject command instead).
(advice-add 'completing-read :around
            (lambda (_orig prompt _collection &optional _pred _req initial &rest _)
              (push prompt cr-questions)
              (if (= (length cr-questions) 1) initial "")))
(advice-add 'eglot--message :before
            (lambda (format &rest args) (push (apply #'format format args) cr-messages)))
(defun cr-action (title)
  (let ((found (cl-find-if (lambda (a) (equal (plist-get a :title) title))
                           (eglot-code-actions (point-min) (point-max)))))
    (unless found (error "no code action %S" title))
    found))
(defun cr-run (title)
  (let ((command (plist-get (cr-action title) :command)))
    (eglot-execute-command (eglot--current-server-or-lose)
                           (plist-get command :command) (plist-get command :arguments))))
"""

EGLOT_DRIVER = driver(
    "eglot",
    EGLOT_USER
    + r"""
(defun cr-main ()
  (find-file (getenv "CARD"))
  (call-interactively #'eglot)
  (cr-wait "the server" (lambda () (eglot-current-server)))
  (cr-wait "the Run action"
           (lambda () (ignore-errors (cr-action "▶ Run card"))))
  (cr-run "▶ Run card")
  (cr-wait "the question, asked again" (lambda () (>= (length cr-questions) 2)))
  (cr-wait "the message naming the diff"
           (lambda () (cl-some (lambda (m) (string-match-p "\\.diff" m)) cr-messages)))
  (cardrunner-reject "say hello in German too")
  (cr-wait "the second review" (lambda () (>= (length cr-questions) 3)))
  (cr-run "✓ Accept & commit")
  (cr-wait "the card Done on disk" (lambda () (cr-card-says "Done")))
  (cr-check-buffer "Done"))
""",
)


def documented_config(client: str) -> str:
    """docs/editors.md's Elisp block for `client`: the one whose first line names it."""
    blocks: list[str] = re.findall(r"```elisp\n(.*?)```", EDITORS.read_text(), flags=re.S)
    [config] = [b for b in blocks if client in b.splitlines()[0]]
    return config


def drive_emacs(tmp_path: Path, name: str, script: str) -> tuple[Project, Path, dict[str, Any]]:
    """Play the greeting card in a batch Emacs running `script`: what it saw (questions,
    messages, and the card's buffer after the run: `cr-check-buffer`).

    The model writes the fix, verifies it, asks to commit (rejected with a reason), asks again
    (accepted) and ends; the script drives the editor's side of that."""
    project = make_project(tmp_path / "ws", name)
    card = project.write_card("greeting", title="Greeting says hello")
    project.transcript(
        "greeting",
        [
            turn(
                tool("write_file", path="src/app.py", content=GOOD_APP),
                *verify_greeting(),
            ),
            turn(tool("git_commit", message="card: greeting\n\nFirst try.")),
            turn(tool("git_commit", message="card: greeting\n\nIn German too.")),
            final(),
        ],
    )
    driver = tmp_path / "driver.el"
    driver.write_text(script)
    out = tmp_path / "out.json"
    (tmp_path / "home").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}",
        CARD=str(card), OUT=str(out), HOME=str(tmp_path / "home"),
    )  # fmt: skip
    assert EMACS is not None
    done = subprocess.run(
        [EMACS, "--batch", "-l", str(driver)], cwd=project.root, env=env,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert out.exists(), f"emacs exited {done.returncode}: {done.stderr[-3000:]}"
    seen: dict[str, Any] = json.loads(out.read_text())
    errors = [m for m in seen["messages"] if m.startswith("ERROR")]
    assert not errors, f"{errors}\n{done.stderr[-3000:]}"
    return project, card, seen


def assert_rejected_with_the_reason_then_accepted(project: Project, card: Path) -> None:
    """The run log's two commits: the first rejected with the user's reason (which reached the
    model), the second accepted; and the card Done on disk."""
    commits = project.commit_results()
    assert "REJECTED" in commits[0] and "say hello in German too" in commits[0]
    assert "Accepted and committed" in commits[1]
    assert front_matter(card.read_text())["state"] == "Done"


@pytest.mark.skipif(not has_package("eglot"), reason="emacs with eglot is not installed")
def test_eglot_runs_reviews_rejects_with_a_reason_and_accepts(tmp_path: Path) -> None:
    project, card, seen = drive_emacs(tmp_path, "emacs", documented_config("eglot") + EGLOT_DRIVER)

    first = seen["questions"][0]
    assert "src/app.py" in first and ".diff" in first and "cardrunner.rejectChanges" in first
    diff_messages = [m for m in seen["messages"] if "the diff to review is" in m]
    assert diff_messages, "plain RET picked Show diff; without showDocument the path is said"
    assert not [m for m in seen["messages"] if "Unknown notification" in m]
    assert_rejected_with_the_reason_then_accepted(project, card)
    assert_the_buffer_follows_the_file(card, seen)


def assert_the_buffer_follows_the_file(card: Path, seen: dict[str, Any]) -> None:
    """The clean buffer after the run: reloaded (no edit applied, so unmodified), reading as the
    Done file, and a save writes the very bytes that are on disk; nobody was told to reload."""
    buffer = seen["buffer"]
    assert not [m for m in seen["messages"] if "reload it" in m or "differ" in m]
    assert buffer["modified"] is False, "the clean buffer was reloaded, not edited"
    assert buffer["text"] == buffer["before"] == card.read_text()
    assert buffer["after"] == buffer["before"], "saving the buffer changed the file"


TYPING = (
    '(find-file (getenv "CARD"))\n  (goto-char (point-max))\n  (insert "Typed while it runs.\\n")\n'
)
DISK_DONE = '  (cr-wait "the card Done on disk" (lambda () (cr-card-says "Done")))\n'
EGLOT_DIRTY_DRIVER = EGLOT_DRIVER.replace('(find-file (getenv "CARD"))\n', TYPING, 1).replace(
    DISK_DONE, "", 1
)  # the same user, who types into the card first; its file stays New until the save
assert EGLOT_DIRTY_DRIVER.count("Typed while it runs.") == 1 and DISK_DONE not in EGLOT_DIRTY_DRIVER


@pytest.mark.skipif(not has_package("eglot"), reason="emacs with eglot is not installed")
def test_eglot_puts_the_state_into_a_buffer_with_unsaved_edits_and_saving_keeps_both(
    tmp_path: Path,
) -> None:
    project, card, seen = drive_emacs(
        tmp_path, "emacs", documented_config("eglot") + EGLOT_DIRTY_DRIVER
    )

    assert "Accepted and committed" in project.commit_results()[1]
    buffer = seen["buffer"]
    assert buffer["modified"] is True
    assert "Typed while it runs." not in buffer["before"], "the file was not written behind it"
    assert front_matter(buffer["before"])["state"] == "New"
    assert buffer["after"] == buffer["text"] == card.read_text(), "the save wrote the buffer"
    assert front_matter(buffer["after"])["state"] == "Done"
    assert "Typed while it runs." in buffer["after"], "the user's edit is kept"
    warned = [m for m in seen["messages"] if "unsaved changes" in m]
    assert warned and "unsaved buffer until you save it" in warned[-1], seen["messages"]


LSP_MODE_DRIVER = driver(
    "lsp-mode",
    r"""
(setq lsp-auto-guess-root t lsp-session-file (expand-file-name "lsp-session" (getenv "HOME"))
      lsp-enable-file-watchers nil lsp-headerline-breadcrumb-enable nil)
;; The user picks "Show diff" from the first question, then dismisses the others.
(advice-add 'completing-read :around
            (lambda (_orig prompt &rest _)
              (push prompt cr-questions)
              (if (= (length cr-questions) 1) "Show diff" "")))
(advice-add 'message :before
            (lambda (format &rest args)
              (when format (push (apply #'format-message format args) cr-messages))))
(defun cr-action (title)
  (or (cl-find-if (lambda (a) (equal (gethash "title" a) title))
                  (append (lsp-code-actions-at-point) nil))
      (error "no code action %S" title)))
(defun cr-main ()
  (find-file (getenv "CARD"))
  (lsp)
  (cr-wait "the server" (lambda () (and (lsp-workspaces)
                                        (eq (lsp--workspace-status (car (lsp-workspaces)))
                                            'initialized))))
  (cr-wait "the Run action" (lambda () (ignore-errors (cr-action "▶ Run card"))))
  (lsp-execute-code-action (cr-action "▶ Run card"))
  (cr-wait "the question, asked again" (lambda () (>= (length cr-questions) 2)))
  (cardrunner-lsp-reject "say hello in German too")
  (cr-wait "the second review" (lambda () (>= (length cr-questions) 3)))
  (cr-wait "the Accept action" (lambda () (ignore-errors (cr-action "✓ Accept & commit"))))
  (lsp-execute-code-action (cr-action "✓ Accept & commit"))
  (cr-wait "the card Done on disk" (lambda () (cr-card-says "Done")))
  (cr-check-buffer "Done"))
""",
)


@pytest.mark.skipif(not has_package("lsp-mode"), reason="emacs with lsp-mode is not installed")
def test_lsp_mode_runs_rejects_with_a_reason_and_accepts_without_warnings(tmp_path: Path) -> None:
    project, card, seen = drive_emacs(
        tmp_path, "lsp-mode", documented_config("lsp-mode") + LSP_MODE_DRIVER
    )

    assert "src/app.py" in seen["questions"][0] and ".diff" in seen["questions"][0]
    assert any("the diff to review is" in m for m in seen["messages"]), "no showDocument"
    assert not [m for m in seen["messages"] if "Unknown notification" in m]
    assert_rejected_with_the_reason_then_accepted(project, card)
    assert_the_buffer_follows_the_file(card, seen)
