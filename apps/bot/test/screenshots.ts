/**
 * Where the dashboard's browser tests save their screenshots: test/artifacts/, which git ignores, so
 * `npm test` leaves the tree as it found it. The one picture the repository keeps, the README's
 * (docs/dashboard.png), is rewritten only on request:
 *
 *   EBB_UPDATE_SCREENSHOTS=1 npx vitest run apps/bot/test/system/dashboard-channel.browser.int.test.ts
 */
import { copyFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export const ARTIFACTS = fileURLToPath(new URL('./artifacts/', import.meta.url));
export const README_SHOT = fileURLToPath(new URL('../../../docs/dashboard.png', import.meta.url));

/** The PNG of one view in test/artifacts/. */
export const shot = (name: string) => `${ARTIFACTS}${name}.png`;

/** Copies the shot `name` over the README's picture, when EBB_UPDATE_SCREENSHOTS=1 asks for it. */
export async function updateReadmeShot(name: string, env = process.env): Promise<boolean> {
  if (env.EBB_UPDATE_SCREENSHOTS !== '1') return false;
  await copyFile(shot(name), README_SHOT);
  return true;
}
