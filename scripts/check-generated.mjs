// Regenerates protobuf code and fails when the committed copy differs: generated code is
// committed (so consumers need no toolchain) and must never drift from proto/.
import { execFileSync } from 'node:child_process';

const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { stdio: 'inherit', ...opts });
run('npm', ['run', '--silent', 'proto:generate']);
const diff = execFileSync('git', ['status', '--porcelain', '--', 'libs/shared/proto/src/gen'], {
  encoding: 'utf8',
});
if (diff.trim() !== '') {
  console.error(
    `Generated protobuf code is out of date. Run \`npm run proto:generate\` and commit:\n${diff}`,
  );
  process.exit(1);
}
console.log('proto: generated code matches proto/');
