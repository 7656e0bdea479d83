// Driving VS Code (code-server) in Chromium through playwright-core, as a user would.
//
// Why selectors and not VS Code's test API: the point is to see what a user sees — a lens to
// click, a status bar, a notification with buttons, diff editors, a QuickPick. Selectors are
// the ones of VS Code 1.139's workbench; each wait has a timeout and every step leaves a
// screenshot in the artifacts folder.
import { createRequire } from "node:module";
import { mkdirSync } from "node:fs";
import * as path from "node:path";

const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function launchBrowser({ playwrightDir, chromium }) {
  const require = createRequire(import.meta.url);
  const { chromium: browserType } = require(playwrightDir);
  return browserType.launch({ executablePath: chromium, headless: true, args: CHROMIUM_ARGS });
}

const normalise = (text) => (text ?? "").replace(/\u00a0/g, " ");

export class Workbench {
  constructor(page, artifacts) {
    this.page = page;
    this.artifacts = artifacts;
    this.shots = 0;
    mkdirSync(artifacts, { recursive: true });
  }

  /** Save a numbered screenshot; returns its path. */
  async shot(name) {
    this.shots += 1;
    const file = path.join(this.artifacts, `${String(this.shots).padStart(2, "0")}-${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  async open(url) {
    await this.page.goto(url);
    await this.page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    await this.page.locator(".statusbar").waitFor({ timeout: 60_000 });
  }

  /** Open a workspace file by its relative path through Quick Open (Ctrl+P). */
  async openFile(rel) {
    await this.page
      .locator(".monaco-workbench")
      .click({ position: { x: 700, y: 400 } })
      .catch(() => undefined);
    await this.page.keyboard.press("Control+P");
    const input = this.page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: 15_000 });
    await input.fill(rel);
    const row = this.page
      .locator(".quick-input-widget .monaco-list-row")
      .filter({ hasText: path.basename(rel) })
      .first();
    await row.click({ timeout: 15_000 });
    const tab = this.page.locator(".tabs-container .tab.active").filter({ hasText: path.basename(rel) });
    await tab.waitFor({ timeout: 15_000 });
  }

  /** Run a command from the palette by its title, e.g. "cardrunner: Show output". */
  async runCommand(title) {
    const input = this.page.locator(".quick-input-widget input");
    for (let attempt = 1; ; attempt += 1) {
      // A palette that is still closing (or focus in a panel that ate the key) needs another try.
      await this.page.keyboard.press(attempt === 1 ? "Control+Shift+P" : "F1");
      try {
        await input.waitFor({ state: "visible", timeout: 5_000 });
        await input.fill(`>${title}`, { timeout: 5_000 });
        break;
      } catch (err) {
        if (attempt === 3) {
          throw err;
        }
        await this.page.keyboard.press("Escape");
      }
    }
    const row = this.page.locator(".quick-input-widget .monaco-list-row").filter({ hasText: title }).first();
    await row.waitFor({ timeout: 15_000 });
    await row.click();
  }

  /** The content of the webview panel that is shown (the board). */
  webview() {
    return this.page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  }

  /** The text of the active editor tab's label. */
  async activeTabLabel() {
    return normalise(await this.page.locator(".tabs-container .tab.active").first().textContent());
  }

  lens(text) {
    return this.page.locator(".codelens-decoration a").filter({ hasText: text }).first();
  }

  /** The status bar item whose text matches `pattern`. */
  statusItem(pattern) {
    return this.page.locator(".statusbar-item").filter({ hasText: pattern }).first();
  }

  notification(pattern) {
    return this.page.locator(".notification-toast").filter({ hasText: pattern }).first();
  }

  /** The message of a notification toast (without its source and buttons). */
  async notificationMessage(toast) {
    return normalise(await toast.locator(".notification-list-item-message").first().textContent());
  }

  async clickNotificationButton(toast, label) {
    await toast.locator(".monaco-button", { hasText: label }).first().click();
  }

  /** Wait for a QuickPick whose title or placeholder matches, and return its widget. */
  async quickInput(pattern, timeoutMs = 30_000) {
    const widget = this.page.locator(".quick-input-widget").filter({ hasText: pattern });
    await widget.first().waitFor({ state: "visible", timeout: timeoutMs });
    return widget.first();
  }

  async pickQuickItem(widget, label) {
    await widget.locator(".monaco-list-row").filter({ hasText: label }).first().click();
  }

  /** The visible text of the active (non-diff) editor. */
  async activeEditorText() {
    const lines = this.page
      .locator(".editor-group-container.active .editor-instance .monaco-editor .view-lines")
      .first();
    return normalise(await lines.innerText());
  }

  /** Every notification toast's text (for failure reports). */
  async notifications() {
    return (await this.page.locator(".notification-toast .notification-list-item-message").allTextContents()).map(
      normalise,
    );
  }

  async statusBarText() {
    return normalise(await this.page.locator(".statusbar").innerText());
  }
}
