/**
 * The store contract: one suite, run against every implementation of the ports (in memory, Postgres,
 * PGlite), so the fake the unit tests use behaves exactly like the real thing. Each test works in a
 * channel, scope and job ids of its own, so implementations may share one database across tests.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe } from 'vitest';
import { channelBasicsCases } from './channel-basics.js';
import { forgettingCases } from './forgetting.js';
import { memoriesCases } from './memories.js';
import { microcompactionCases } from './microcompaction.js';
import { runsCases } from './runs.js';
import { spliceCases } from './splice.js';
import type { ContractContext, ContractStores } from './support.js';
import { truncateCases } from './truncate.js';

export type { ContractStores } from './support.js';

export function describeStoreContract(name: string, makeStores: () => Promise<ContractStores>): void {
  describe(`${name}: store contract`, () => {
    let context: ContractContext;
    beforeEach(async () => {
      context = { stores: await makeStores(), key: `web:${randomUUID()}` };
    });
    afterEach(async () => {
      await context.stores.close();
    });
    const current = () => context;
    channelBasicsCases(current);
    spliceCases(current);
    truncateCases(current);
    microcompactionCases(current);
    forgettingCases(current);
    memoriesCases(current);
    runsCases(current);
  });
}
