#!/usr/bin/env node
// The `ebb` command. Node 20 cannot run TypeScript itself, so tsx compiles the sources on load.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
