#!/usr/bin/env node
// The build's step after tsc (the root's `npm run build`): bundles the dashboard's browser code into
// packages/web/dist/dashboard-browser.js, which the compiled server inlines in the page (src/dashboard-bundle.ts).
import { writeDashboardBundle } from '../dist/dashboard-bundle.js';

await writeDashboardBundle();
