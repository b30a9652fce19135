/**
 * An MCP tool result as the text the model reads. Text parts are joined as they are; parts the chat
 * model cannot take as text (images, audio) are named in a bracket so the model knows something was
 * left out; embedded resources give their text when they have one. A result with only
 * `structuredContent` is its JSON.
 */

interface ContentPart {
  readonly type: string;
  readonly text?: unknown;
  readonly mimeType?: unknown;
  readonly uri?: unknown;
  readonly resource?: { readonly uri?: unknown; readonly text?: unknown; readonly mimeType?: unknown };
}

export interface McpCallResult {
  readonly content?: unknown;
  readonly structuredContent?: unknown;
  readonly isError?: unknown;
}

export function mcpResultText(result: McpCallResult): string {
  const parts = Array.isArray(result.content) ? (result.content as ContentPart[]) : [];
  const texts = parts.map(partText).filter((t) => t !== '');
  if (texts.length > 0) return texts.join('\n');
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return '(the tool returned nothing)';
}

function partText(part: ContentPart): string {
  switch (part.type) {
    case 'text':
      return typeof part.text === 'string' ? part.text : '';
    case 'resource':
      if (typeof part.resource?.text === 'string') return part.resource.text;
      return `[resource ${String(part.resource?.uri ?? '')} (${String(part.resource?.mimeType ?? 'binary')}) left out]`;
    case 'resource_link':
      return `[resource link ${String(part.uri ?? '')}]`;
    default:
      return `[${part.type} (${String(part.mimeType ?? 'binary')}) left out: only text reaches the model]`;
  }
}
