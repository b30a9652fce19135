/**
 * `npm run lint`'s cycle check: no import cycle anywhere in the tree, type-only imports included (a
 * type cycle is a shared type living in a logic file; see issue 24).
 *
 * - The parser is swc: TypeScript 7 has no JS compiler API, so dependency-cruiser's own `tsc` parser
 *   (and madge's, through typescript-estree) cannot read our sources. swc keeps `import type` and
 *   `import { type X }`, so type-only edges count.
 * - `./x.js` imports of `x.ts` sources resolve by dependency-cruiser's own `.js` → `.ts` retry.
 * - Workspace packages resolve through their `ebb-source` export condition to `src/`, so a cycle
 *   between packages is found too.
 * - Packages in node_modules are not followed but not excluded either, so the edge to `openai` from
 *   anywhere but `@ebb/llm` (and the fake servers of `@ebb/testing`) fails the check.
 * - Only tests import the in-memory stores (`@ebb/core/testing`).
 * - Core's imports point down its layers: support < model < rendering < plans < decision <
 *   simulation (a folder imports only those below it; `ports/`, the shell's contracts, sits beside
 *   the chain for every folder but `support/`, which imports nothing of the core). Tests are exempt.
 */
const CORE = '^packages/core/src/';
const TESTS = '\\.test\\.ts$';
/** A folder of the core may not import these (the folders above it in the chain). */
const CORE_ABOVE = {
  support: ['model', 'rendering', 'plans', 'decision', 'simulation', 'ports', 'memory', 'tools', 'usage'],
  model: ['rendering', 'plans', 'decision', 'simulation'],
  rendering: ['plans', 'decision', 'simulation'],
  plans: ['decision', 'simulation'],
  decision: ['simulation'],
};
const coreLayers = Object.entries(CORE_ABOVE).map(([folder, above]) => ({
  name: `core-${folder}-imports-down`,
  severity: 'error',
  comment: `packages/core/src/${folder}/ may not import ${above.join(', ')}: move the shared piece down.`,
  from: { path: `${CORE}${folder}/`, pathNot: TESTS },
  to: { path: `${CORE}(${above.join('|')})/` },
}));
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Move the shared type (or value) into a module both sides import.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'openai-only-in-llm',
      severity: 'error',
      comment:
        'The OpenAI client is built in @ebb/llm only (openAiClient); the fake servers in @ebb/testing speak its wire types.',
      from: { pathNot: '^packages/(llm|testing)/' },
      to: { path: '(^|/)node_modules/openai/' },
    },
    {
      name: 'in-memory-stores-only-in-tests',
      severity: 'error',
      comment:
        "The in-memory stores (@ebb/core/testing) are the tests' stores and the contract suites' reference, not a product part.",
      from: { pathNot: ['\\.test\\.ts$', '/test/', '^packages/core/src/testing/', '^packages/testing/'] },
      to: { path: '^packages/core/src/testing/' },
    },
    ...coreLayers,
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|\\.ebb|coverage)/' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['ebb-source', 'import', 'node', 'default'],
      extensions: ['.ts', '.mts', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};
