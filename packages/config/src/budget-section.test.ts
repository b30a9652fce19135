import { describe, expect, it } from 'vitest';
import { parseConfig } from './parse-config.js';
import { resolveChannel } from './resolve-channel.js';

const PRICED = '[prices."gpt-5.4-mini"]\ninput_per_mtok = 0.75\noutput_per_mtok = 4.5\n';

describe('[budget]', () => {
  it('sets no limit by default, and layers as every overridable section does', () => {
    expect(resolveChannel(parseConfig('', 'config.toml'), 'web:ops').budget).toEqual({
      over: 'notice',
      limited: false,
    });
    const config = parseConfig(
      `${PRICED}[budget]\nworkspace_monthly_usd = 200\n[slack.budget]\ndaily_usd = 5\n` +
        '[channels."slack:T1:C9".budget]\ndaily_usd = 1.5\nover = "silent"\n',
      'config.toml',
    );
    expect(resolveChannel(config, 'slack:T1:C9').budget).toEqual({
      dailyUsd: 1.5,
      workspaceMonthlyUsd: 200,
      over: 'silent',
      limited: true,
    });
    expect(resolveChannel(config, 'slack:T1:C1').budget.dailyUsd).toBe(5);
    expect(resolveChannel(config, 'web:ops').budget).toEqual({
      workspaceMonthlyUsd: 200,
      over: 'notice',
      limited: true,
    });
  });

  it('refuses a limit that is not a positive number of dollars, and an unknown over', () => {
    expect(() => parseConfig(`${PRICED}[budget]\ndaily_usd = 0\n`, 'config.toml')).toThrow(
      /budget\.daily_usd[\s\S]*must be a number of US dollars above 0/,
    );
    expect(() => parseConfig('[budget]\nover = "stop"\n', 'config.toml')).toThrow(
      /budget\.over[\s\S]*must be one of "notice", "cheaper_model", "silent"/,
    );
  });

  it('refuses over = "cheaper_model" without the model, where it is set', () => {
    expect(() =>
      parseConfig(
        `${PRICED}[channels."web:*".budget]\ndaily_usd = 1\nover = "cheaper_model"\n`,
        'config.toml',
      ),
    ).toThrow(
      /channels\."web:\*"\.budget\.over[\s\S]*budget\.cheaper_model must name the model to answer on/,
    );
    // `over` as a default for the places that set a limit, where none is set: nothing to refuse.
    expect(() =>
      parseConfig(
        `${PRICED}[prices."gpt-5.4-nano"]\ninput_per_mtok = 0.2\noutput_per_mtok = 1.25\n` +
          '[budget]\nover = "cheaper_model"\n[slack.budget]\ndaily_usd = 1\ncheaper_model = "gpt-5.4-nano"\n',
        'config.toml',
      ),
    ).not.toThrow();
  });

  it('refuses a limit on a channel whose calls [prices] cannot price, naming the models', () => {
    expect(() => parseConfig('[discord.budget]\ndaily_usd = 2\n', 'config.toml')).toThrow(
      /discord\.budget\.daily_usd[\s\S]*needs \[prices\] for "gpt-5\.4-mini"/,
    );
    expect(() =>
      parseConfig(
        `${PRICED}[budget]\ndaily_usd = 2\nover = "cheaper_model"\ncheaper_model = "gpt-5.4-nano"\n`,
        'config.toml',
      ),
    ).toThrow(/budget\.daily_usd[\s\S]*needs \[prices\] for "gpt-5\.4-nano"/);
    // A workspace's limit counts every channel of it: a model any channel uses needs its price.
    expect(() =>
      parseConfig(
        `${PRICED}[budget]\nworkspace_daily_usd = 50\n[channels."slack:T1:C9".llm]\nmodel = "gpt-x"\n`,
        'config.toml',
      ),
    ).toThrow(/budget\.workspace_daily_usd[\s\S]*needs \[prices\] for "gpt-x"/);
  });
});
