/** Typed memories extracted from a channel's history and recalled into its prompts. */

export const MEMORY_TYPES = ['fact', 'decision', 'preference', 'person', 'task', 'event'] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];

export interface Memory {
  readonly id: string;
  readonly type: MemoryType;
  readonly text: string;
  /** 0..1: how much it matters when recall must choose. */
  readonly importance: number;
  readonly speaker?: string;
  /** The scope it may be recalled in: a channel key, or a workspace/guild scope when configured. */
  readonly scope: string;
  readonly fromSeq: number;
  readonly toSeq: number;
}
