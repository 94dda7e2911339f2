import { describe, expect, it, onTestFinished } from 'vitest';
import { Interrupted, Lifecycle } from '../../src/cli/lifecycle.js';

describe('a start-up step a signal cuts short', () => {
  it('is left behind when it had not settled, and what it gives later is discarded', async () => {
    const life = new Lifecycle(() => {}).own();
    onTestFinished(() => life.release());
    let arrive: (value: string) => void = () => {};
    const discarded: string[] = [];
    const waiting = life.during(new Promise<string>((resolve) => (arrive = resolve)), (late) => discarded.push(late));
    process.emit('SIGINT');
    await expect(waiting).rejects.toBeInstanceOf(Interrupted);
    expect(life.leftWorkBehind).toBe(true);
    arrive('a late connection');
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(discarded).toEqual(['a late connection']);
  });

  it('is not, when it settled before the signal', async () => {
    const life = new Lifecycle(() => {}).own();
    onTestFinished(() => life.release());
    expect(await life.during(Promise.resolve('connected'), () => {})).toBe('connected');
    process.emit('SIGINT');
    await life.interrupted;
    expect(life.leftWorkBehind).toBe(false);
  });
});
