import { PACKAGE_VERSION } from './source-files.js';

/** The hub's release, from its package.json. */
export const HUB_VERSION = PACKAGE_VERSION;
