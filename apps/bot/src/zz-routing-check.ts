import { parseArgs } from 'node:util';
import { compact } from './commands/compact.js';
import type { CommandIo } from './commands/io.js';
import { memoriesForget, memoriesList } from './commands/memories.js';
import { status } from './commands/status.js';

declare function usage(io: CommandIo, problem: string): number;

export async function route(command: string, rest: string[], io: CommandIo): Promise<number> {
    switch (command) {
      case 'status': {
        const { values } = parseArgs({
          args: rest,
          options: {
            channel: { type: 'string' },
            json: { type: 'boolean' },
            config: { type: 'string' },
            embedded: { type: 'boolean' },
          },
          strict: true,
        });
        return await status(values, io);
      }
      case 'compact': {
        const { values, positionals } = parseArgs({
          args: rest,
          allowPositionals: true,
          options: { focus: { type: 'string' }, config: { type: 'string' } },
          strict: true,
        });
        const [channel, ...extra] = positionals;
        if (channel === undefined || extra.length > 0) return usage(io, 'compact takes one channel KEY');
        return await compact({ channel, ...values }, io);
      }
      case 'memories': {
        const [sub, ...args] = rest;
        switch (sub) {
          case 'list': {
            const { values } = parseArgs({
              args,
              options: {
                channel: { type: 'string' },
                speaker: { type: 'string' },
                json: { type: 'boolean' },
                embedded: { type: 'boolean' },
              },
              strict: true,
            });
            return await memoriesList(values, io);
          }
          case 'forget': {
            const { values } = parseArgs({
              args,
              options: {
                id: { type: 'string', multiple: true },
                channel: { type: 'string' },
                speaker: { type: 'string' },
                yes: { type: 'boolean' },
                embedded: { type: 'boolean' },
              },
              strict: true,
            });
            const { id, ...filters } = values;
            return await memoriesForget({ ...filters, ids: id }, io);
          }
          default:
            return usage(io, `unknown command: memories ${sub ?? ''}`.trim());
        }
      }
    }
    return 0;
}
