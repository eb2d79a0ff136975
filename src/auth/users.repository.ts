import { Injectable } from '@nestjs/common';
import { DataSource, type Repository } from 'typeorm';
import { User } from './entities/user.entity.js';

export type NewUser = Pick<User, 'userName' | 'displayName' | 'system' | 'passwordHash'>;

@Injectable()
export class UsersRepository {
  private readonly users: Repository<User>;

  constructor(dataSource: DataSource) {
    this.users = dataSource.getRepository(User);
  }

  /** `id` is a UUID (a path parameter checked by ResourceId, or a token's subject). */
  findById(id: string): Promise<User | null> {
    return this.users.findOneBy({ id });
  }

  /** User names are unique ignoring case; this lookup uses the same index. */
  findByUserName(userName: string): Promise<User | null> {
    return this.users.createQueryBuilder('u').where('lower(u.user_name) = lower(:userName)', { userName }).getOne();
  }

  hasSystemUser(): Promise<boolean> {
    return this.users.existsBy({ system: true });
  }

  /** Inserts the user unless one of that name exists; true when this call created it. */
  async insertIfAbsent(user: NewUser): Promise<boolean> {
    const result = await this.users.createQueryBuilder().insert().values(user).orIgnore().returning('id').execute();
    return (result.raw as unknown[]).length > 0;
  }
}
