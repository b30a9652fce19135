/**
 * The invariants of a working context, checked from scratch (the opposite of how the core keeps
 * them). Returns the problems found, so a failing property shows all of them.
 */
import type { ArchivedMessage, ContextView } from '../src/model/model.js';

export function contextProblems(view: ContextView, archive: readonly ArchivedMessage[]): string[] {
  const problems: string[] = [];
  let next = 1;
  for (const s of view.spans) {
    if (s.fromSeq !== next) problems.push(`span ${s.fromSeq}..${s.toSeq} should start at ${next}`);
    if (s.toSeq < s.fromSeq) problems.push(`span ${s.fromSeq}..${s.toSeq} is empty`);
    next = s.toSeq + 1;
  }
  for (const m of view.raw) {
    if (m.seq !== next) problems.push(`raw message ${m.seq} should be ${next}`);
    // A context copy (clipped, or a stub) is the same message: its role and pairing are the archive's.
    const archived = archive[m.seq - 1];
    if (archived && (archived.role !== m.role || archived.toolCallId !== m.toolCallId))
      problems.push(`raw message ${m.seq} is not the archive's ${archived.role} message`);
    next = m.seq + 1;
  }
  if (next - 1 !== view.headSeq) problems.push(`context ends at ${next - 1}, head is ${view.headSeq}`);
  if (archive.length !== view.headSeq)
    problems.push(`archive holds ${archive.length}, head is ${view.headSeq}`);

  let tokens = 0;
  for (const s of view.spans) tokens += s.tokens;
  for (const m of view.raw) tokens += m.tokens;
  if (tokens !== view.tokens) problems.push(`tokens ${view.tokens}, recomputed ${tokens}`);

  // A tool call and its results sit in the same part: the same span, or all raw.
  const partOf = (seq: number) => view.spans.findIndex((s) => s.fromSeq <= seq && seq <= s.toSeq);
  const callSeq = new Map<string, number>();
  for (const m of archive) for (const c of m.toolCalls ?? []) callSeq.set(c.id, m.seq);
  for (const m of archive) {
    if (m.role !== 'tool' || m.toolCallId === undefined) continue;
    const call = callSeq.get(m.toolCallId);
    if (call === undefined) problems.push(`tool result ${m.seq} has no call`);
    else if (partOf(call) !== partOf(m.seq))
      problems.push(`tool call ${call} separated from its result ${m.seq}`);
  }
  return problems;
}
