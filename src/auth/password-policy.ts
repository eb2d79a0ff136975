import { Injectable } from '@nestjs/common';
import { HubConfig } from '../common/config/hub-config.js';
import { invalidBody } from '../common/validation/validate-input.js';

/** The password policy (HUB_PASSWORD_MIN_LENGTH; never the user name), applied wherever a password is set. */
@Injectable()
export class PasswordPolicy {
  constructor(private readonly config: HubConfig) {}

  /** Throws a 400 naming the body property at `path` (`/password`, `/newPassword`) when `password` breaks the policy. */
  check(password: string, userName: string, path: string): void {
    const field = path.slice(1);
    const problems: string[] = [];
    // Characters as people count them, not UTF-16 units.
    if ([...password].length < this.config.passwordMinLength) problems.push(`${field} must be at least ${this.config.passwordMinLength} characters long`);
    if (password.toLowerCase() === userName.toLowerCase()) problems.push(`${field} must not be the user name`);
    if (problems.length > 0) throw invalidBody([{ path, message: problems.join('; ') }]);
  }
}
