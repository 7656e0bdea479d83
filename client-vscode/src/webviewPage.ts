/**
 * The one page shell both webviews (the board, the run view) are served in.
 *
 * Why one: VS Code's webview guidelines are the same for both — a strict Content-Security-Policy
 * with a nonce for the one style and the one script, images only from the extension, no remote
 * resources — and a policy written twice is a policy that drifts.
 */
export interface WebviewPage {
  cspSource: string;
  nonce: string;
  title: string;
  /** The page's `<main>`, written by the extension (never from data the page is sent). */
  main: string;
  style: string;
  script: string;
}

export function webviewPage(page: WebviewPage): string {
  const { cspSource, nonce } = page;
  const csp = [
    "default-src 'none'",
    `style-src ${cspSource} 'nonce-${nonce}'`,
    `script-src 'nonce-${nonce}'`,
    `img-src ${cspSource}`,
  ].join("; ");
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">${page.style}</style>
<title>${page.title}</title></head>
<body>${page.main}
<script nonce="${nonce}">${page.script}</script></body></html>`;
}
