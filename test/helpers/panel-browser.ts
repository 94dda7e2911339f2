import { existsSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { type Panel, startPanel } from '../../src/panel/server.js';
import type { Script } from '../../src/scripted/script.js';
import { type Harness, startHarness } from './harness.js';

const CHROMIUM = '/usr/bin/chromium';

/** A worker harness, a panel in front of it, and a headless Chromium to look at the panel with. */
export interface PanelInBrowser {
  h: Harness;
  panel: Panel;
  browser: Browser;
  /** A tab of its own (its own session storage), signed in with `token`. */
  openTab(token: string, viewport?: { width: number; height: number }): Promise<Page>;
  stop(): Promise<void>;
}

export async function startPanelInBrowser(opts: { scripts: Record<string, Script>; token: string; env?: NodeJS.ProcessEnv }): Promise<PanelInBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/setup.sh --browser (apt-get install chromium)`);
  const h = await startHarness({ scripts: opts.scripts });
  const panel = await startPanel({ client: h.tc, port: 0, token: opts.token, temporalUiUrl: 'http://localhost:8233', env: opts.env });
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  return {
    h,
    panel,
    browser,
    openTab: async (token, viewport = { width: 1280, height: 900 }) => {
      const page = await (await browser.newContext({ viewport })).newPage();
      await page.goto(`${panel.url}#token=${token}`);
      return page;
    },
    stop: async () => {
      await browser.close();
      await panel.close();
      await h.stop();
    },
  };
}

/**
 * Registers a suite's set-up and tear-down of a panel in a browser, with one
 * tab signed in with `token`; the parts are there once `beforeAll` has run.
 */
export function usePanelInBrowser(opts: { scripts: Record<string, Script>; token: string; viewport?: { width: number; height: number } }): {
  readonly h: Harness;
  readonly panel: Panel;
  readonly page: Page;
} {
  let env: PanelInBrowser | undefined;
  let page: Page | undefined;
  beforeAll(async () => {
    env = await startPanelInBrowser(opts);
    page = await env.openTab(opts.token, opts.viewport);
  }, 120_000);
  afterAll(async () => {
    await env?.stop();
  });
  const ready = () => {
    if (!env || !page) throw new Error('the panel in a browser is not started yet: use it inside a test');
    return { env, page };
  };
  return {
    get h() {
      return ready().env.h;
    },
    get panel() {
      return ready().env.panel;
    },
    get page() {
      return ready().page;
    },
  };
}
