/**
 * The server's questions that a run waits on (`window/showMessageRequest`), shown as a modal
 * dialog. In VS Code that is the trust question: the client shows reviews itself, so the review
 * question is never sent.
 *
 * Why not the language client's default, a warning notification with buttons: VS Code moves a
 * toast that is not an error into the notification centre after about 12 s, leaving only a dot
 * on the bell, while the run waits for the answer (up to 15 minutes) at "starting · round 0". The
 * user has just clicked Run, and the question is about what a repository may run on their
 * machine, so it is asked the way VS Code's own Workspace Trust asks: a dialog that cannot be
 * missed. The first line is the dialog's message; the rest (what the repository's config asks
 * for) is its detail. The server lists the harmless answer first ("Don't run"), and Escape gives
 * that answer.
 */

/** A server's question: its text and its answers (the LSP's `MessageActionItem` titles). */
export interface Question {
  message: string;
  actions: string[];
}

/** What the dialog shows: a one-line message, the detail under it, and its buttons. */
export interface Dialog {
  message: string;
  detail: string;
  /** Buttons in the server's order; the first is also what Escape answers. */
  buttons: { title: string; isCloseAffordance: boolean }[];
}

export function dialogOf(question: Question): Dialog {
  const [first = "", ...rest] = question.message.split("\n");
  return {
    message: first.trim(),
    detail: rest
      .map((line) => line.trim())
      .filter((line) => line !== "")
      .join("\n"),
    buttons: question.actions.map((title, i) => ({ title, isCloseAffordance: i === 0 })),
  };
}
