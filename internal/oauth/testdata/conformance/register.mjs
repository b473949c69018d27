// node --import ./register.mjs: installs hooks.mjs (see there).
import { register } from 'node:module';
register('./hooks.mjs', import.meta.url);
