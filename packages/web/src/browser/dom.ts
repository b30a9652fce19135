/**
 * The page's helpers: its elements by id, new elements (text from the server only ever goes in as
 * text, never as HTML), number and time formats (`format.ts`), and announcements in the polite live
 * region.
 */
import type { DashboardThresholds } from '../dashboard-api.js';
import { span } from './format.js';

type AttrValue = string | number | boolean | null | undefined;
export type Child = Node | string | null | undefined;

/** The page's element `#id`; `kind` when the caller needs an input, a button or a form. */
export function $(id: string): HTMLElement;
export function $<T extends HTMLElement>(id: string, kind: { new (): T; prototype: T }): T;
export function $(id: string, kind?: { new (): HTMLElement; prototype: HTMLElement }): HTMLElement {
  const found = document.getElementById(id);
  if (found === null || (kind !== undefined && !(found instanceof kind)))
    throw new Error(`the page has no ${kind?.name ?? 'element'} #${id}`);
  return found;
}

/** An element: `class` and `text` set its class name and text; an absent, null or false value no attribute. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Readonly<Record<string, AttrValue>> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = String(v);
    else if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== undefined && c !== null) e.append(c);
  return e;
}

const SVGNS = 'http://www.w3.org/2000/svg';

export function svg(
  tag: string,
  attrs: Readonly<Record<string, string | number>>,
  text?: string,
): SVGElement {
  const e = document.createElementNS(SVGNS, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export { clock, num, pct, plural } from './format.js';

export function ago(iso: string | null): string {
  return iso ? `${span(Date.now() - Date.parse(iso))} ago` : '—';
}

/** A channel's thresholds, lowest first, with their names. */
export const thresholdList = (t: DashboardThresholds) =>
  Object.entries(t) as [keyof DashboardThresholds, number][];

/** A sentence in the live region, which keeps the last five. */
export function announce(text: string): void {
  const region = $('announcer');
  region.append(el('p', { text }));
  while (region.children.length > 5) region.firstElementChild?.remove();
}
