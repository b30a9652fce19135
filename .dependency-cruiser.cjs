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
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Move the shared type (or value) into a module both sides import.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|\\.ebb|coverage)/' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['ebb-source', 'import', 'node', 'default'],
      extensions: ['.ts', '.mts', '.js', '.mjs', '.cjs', '.json'],
    },
  },
};
